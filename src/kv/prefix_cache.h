// PrefixCache: the index from BlockHash to the physical block that holds that content, for full blocks only.
// Invariant: a hash maps to at most one block and a block is named by at most one hash, so the index never
// holds more than num_blocks entries; it is an open-addressing table sized once, so inserting and erasing
// allocate nothing. Which blocks are indexed is decided by BlockPool (it erases a block's hash on eviction).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/types.h"
#include "kv/block_hash.h"
#include "kv/prefix_hit.h"

namespace pagoda {

class PrefixCache {
 public:
  explicit PrefixCache(int32_t num_blocks);

  std::optional<BlockId> find(BlockHash hash) const;
  // False (and no change) when the hash is already indexed, possibly to another block.
  bool insert(BlockHash hash, BlockId block_id);
  // Removes hash -> block_id; the pair must be indexed.
  void erase(BlockHash hash, BlockId block_id);
  int32_t size() const { return num_entries_; }

  // The longest chain of indexed full blocks that starts `tokens`. It never covers the block of the last token
  // in full: a sequence must compute at least one token to get logits (as vLLM does), so at most
  // (tokens.size() - 1) / block_size blocks are returned, even when the last block is cached too.
  PrefixHit lookup(std::span<const TokenId> tokens, int32_t block_size, uint64_t extra_key) const;

 private:
  size_t home_slot(BlockHash hash) const { return size_t(hash) & mask_; }
  std::optional<size_t> find_slot(BlockHash hash) const;

  size_t mask_;  // capacity - 1, capacity a power of two >= 2 * num_blocks
  int32_t num_blocks_;
  int32_t num_entries_ = 0;
  std::vector<BlockHash> hashes_;   // [capacity]
  std::vector<BlockId> block_ids_;  // [capacity], -1: empty slot
};

}  // namespace pagoda
