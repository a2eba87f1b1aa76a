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

  bool empty() const { return block_table.empty() && num_computed_tokens == 0 && state_slot < 0; }

  BlockTable block_table;
  // Leading positions that own a KV slot: computed, cached, or scheduled in the step allocate_slots was
  // called for. Positions [0, num_computed_tokens) map to slots through block_table.
  int32_t num_computed_tokens = 0;
  std::vector<BlockHash> block_hashes;  // [num hashed full blocks], empty while prefix caching is off
  // A hybrid model's recurrent-state slot (kv/state_storage.h), held from the first allocation to free(); -1: none.
  // The state in it covers positions [0, num_computed_tokens) once the step that computes them has run.
  int32_t state_slot = -1;
  // Speculative decoding on a hybrid model: the computed tokens the state covered when it was backed up before a
  // verification (KvCacheManager::back_up_state); -1: no backup held.
  int32_t state_backup_pos = -1;
};

}  // namespace pagoda
