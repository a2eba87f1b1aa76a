// SeqKvState: what the KV bookkeeping keeps per sequence (the engine's Sequence will hold one). Changed only by
// KvCacheManager. Invariants: block_table holds exactly ceil(num_computed_tokens / block_size) blocks, and
// block_hashes[j] is the chained hash of logical block j for the leading full blocks hashed so far.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_table.h"

namespace pagoda {

struct SeqKvState {
  explicit SeqKvState(int32_t block_size) : block_table(block_size) {}

  bool empty() const { return block_table.empty() && num_computed_tokens == 0; }

  BlockTable block_table;
  // Leading positions that own a KV slot: computed, cached, or scheduled in the step allocate_slots was
  // called for. Positions [0, num_computed_tokens) map to slots through block_table.
  int32_t num_computed_tokens = 0;
  std::vector<BlockHash> block_hashes;  // [num hashed full blocks], empty while prefix caching is off
};

}  // namespace pagoda
