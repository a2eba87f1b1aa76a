// BlockPool: the physical KV blocks and their reference counts; knows nothing of tokens or requests.
// Invariants: a block is in the free list exactly when its ref count is 0; the free list holds every uncached
// free block before every cached one (a cached block is one whose hash is in the PrefixCache), and the cached
// ones run from least to most recently freed. So allocation takes uncached blocks first and evicts cached
// blocks in LRU order only when none is left. Every operation is O(1) per block and allocates nothing, except
// allocate(), whose result vector is the interface's. Running out of blocks is a value, never an abort.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/types.h"
#include "kv/block_hash.h"
#include "kv/prefix_cache.h"

namespace pagoda {

class BlockPool {
 public:
  // `prefix_cache` (may be null: prefix caching off) is the index this pool keeps in step with its blocks.
  explicit BlockPool(int32_t num_blocks, PrefixCache* prefix_cache = nullptr);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // `num_blocks` blocks with ref count 1, or nullopt (allocating nothing) when fewer are free.
  std::optional<std::vector<BlockId>> allocate(int32_t num_blocks);
  // One block with ref count 1, or nullopt when none is free. Evicting a cached block unindexes its hash.
  std::optional<BlockId> allocate_one();
  // The block allocate_one() would take next (perhaps a cached one it would evict), or nullopt when none is free.
  std::optional<BlockId> next_free() const;
  // Ref count + 1. A free block may be retained only while it is cached (a prefix hit revives it).
  void retain(BlockId block_id);
  // Ref count - 1; at 0 the block is freed: a cached one to the most-recent end of the LRU, an uncached one
  // to the front, where it is reused first.
  void release(BlockId block_id);
  // Indexes a used block under `hash` so later prompts find it. False when prefix caching is off or another
  // block already holds this hash (the block then stays uncached); true when indexed, now or before.
  bool cache_block(BlockId block_id, BlockHash hash);

  int32_t ref_count(BlockId block_id) const { return ref_counts_[checked(block_id)]; }
  bool is_cached(BlockId block_id) const { return is_cached_[checked(block_id)] != 0; }
  std::optional<BlockHash> block_hash(BlockId block_id) const;

  int32_t num_total() const { return num_blocks_; }
  int32_t num_free() const { return num_free_; }
  int32_t num_used() const { return num_blocks_ - num_free_; }
  int32_t num_cached() const { return num_cached_free_; }  // free but still findable by a prefix lookup

  // The free blocks in the order allocation would take them. O(num_blocks); for tests and debugging.
  std::vector<BlockId> free_blocks_in_order() const;

 private:
  size_t checked(BlockId block_id) const;
  void unlink(BlockId block_id);
  void link_before(BlockId next_id, BlockId block_id);

  int32_t num_blocks_;
  PrefixCache* prefix_cache_;
  int32_t num_free_;
  int32_t num_cached_free_ = 0;
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<BlockHash> hashes_;    // [num_blocks] valid where is_cached_
  std::vector<uint8_t> is_cached_;   // [num_blocks] 1: hashes_[b] is indexed to b
  // The free list: a circular doubly linked list through [num_blocks + 1] entries, the last being the sentinel.
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
};

}  // namespace pagoda
