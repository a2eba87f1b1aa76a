// PrefixHit: what a prefix-cache lookup found for a prompt: the leading full blocks whose K/V is already
// cached. Valid only until the pool next changes (allocate_slots, free): pass it straight to allocate_slots.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "kv/block_hash.h"

namespace pagoda {

struct PrefixHit {
  std::vector<BlockId> block_ids;       // [num_hit_blocks] physical blocks of logical blocks 0..n-1
  std::vector<BlockHash> block_hashes;  // [num_hit_blocks] their chained hashes
  int32_t num_cached_tokens = 0;        // num_hit_blocks * block_size: tokens the sequence need not compute
  int32_t num_prompt_tokens = 0;        // tokens looked up, for the query/hit figures
  // A hybrid model's: the snapshot slot (kv/state_snapshot_cache.h) holding the state after the last hit block; -1
  // for other models.
  int32_t state_snapshot_slot = -1;
  // A hybrid model's: tokens of the cached chain before the cut to the deepest snapshot (>= num_cached_tokens).
  int32_t num_chain_tokens = 0;

  bool empty() const { return block_ids.empty(); }
};

}  // namespace pagoda
