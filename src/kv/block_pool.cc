// BlockPool: an intrusive doubly linked free list over index arrays.
#include "kv/block_pool.h"

#include "core/check.h"

namespace pagoda {

BlockPool::BlockPool(int32_t num_blocks, PrefixCache* prefix_cache)
    : num_blocks_(num_blocks),
      prefix_cache_(prefix_cache),
      num_free_(num_blocks),
      ref_counts_(size_t(num_blocks), 0),
      hashes_(size_t(num_blocks), 0),
      is_cached_(size_t(num_blocks), 0),
      prev_(size_t(num_blocks) + 1),
      next_(size_t(num_blocks) + 1) {
  PAGODA_CHECK(num_blocks > 0, "a KV pool needs at least one block, got {}", num_blocks);
  // Fresh blocks are handed out in id order: 0, 1, 2, ...
  for (int32_t i = 0; i <= num_blocks; ++i) {
    prev_[size_t(i)] = i == 0 ? num_blocks : i - 1;
    next_[size_t(i)] = i == num_blocks ? 0 : i + 1;
  }
}

size_t BlockPool::checked(BlockId block_id) const {
  PAGODA_CHECK(block_id >= 0 && block_id < num_blocks_, "block {} outside the pool of {}", block_id, num_blocks_);
  return size_t(block_id);
}

void BlockPool::unlink(BlockId block_id) {
  const int32_t prev_id = prev_[size_t(block_id)], next_id = next_[size_t(block_id)];
  next_[size_t(prev_id)] = next_id;
  prev_[size_t(next_id)] = prev_id;
}

void BlockPool::link_before(BlockId next_id, BlockId block_id) {
  const int32_t prev_id = prev_[size_t(next_id)];
  prev_[size_t(block_id)] = prev_id;
  next_[size_t(block_id)] = next_id;
  next_[size_t(prev_id)] = block_id;
  prev_[size_t(next_id)] = block_id;
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int32_t num_blocks) {
  PAGODA_CHECK(num_blocks >= 0);
  if (num_blocks > num_free_) return std::nullopt;
  std::vector<BlockId> block_ids;
  block_ids.reserve(size_t(num_blocks));
  for (int32_t i = 0; i < num_blocks; ++i) block_ids.push_back(*allocate_one());
  return block_ids;
}

std::optional<BlockId> BlockPool::allocate_one() {
  if (num_free_ == 0) return std::nullopt;
  const BlockId block_id = next_[size_t(num_blocks_)];
  unlink(block_id);
  --num_free_;
  if (is_cached_[size_t(block_id)]) {
    // Eviction: the content is about to be overwritten, so it must stop being findable.
    prefix_cache_->erase(hashes_[size_t(block_id)], block_id);
    is_cached_[size_t(block_id)] = 0;
    --num_cached_free_;
  }
  ref_counts_[size_t(block_id)] = 1;
  return block_id;
}

std::optional<BlockId> BlockPool::next_free() const {
  if (num_free_ == 0) return std::nullopt;
  return next_[size_t(num_blocks_)];
}

void BlockPool::retain(BlockId block_id) {
  int32_t& ref_count = ref_counts_[checked(block_id)];
  if (ref_count == 0) {
    PAGODA_CHECK(is_cached_[size_t(block_id)], "block {} is free and uncached: its content is garbage", block_id);
    unlink(block_id);
    --num_free_;
    --num_cached_free_;
  }
  ++ref_count;
}

void BlockPool::release(BlockId block_id) {
  int32_t& ref_count = ref_counts_[checked(block_id)];
  PAGODA_CHECK(ref_count > 0, "block {} released more often than retained", block_id);
  if (--ref_count > 0) return;
  ++num_free_;
  if (is_cached_[size_t(block_id)]) {
    link_before(num_blocks_, block_id);  // the tail: most recently used, evicted last
    ++num_cached_free_;
  } else {
    link_before(next_[size_t(num_blocks_)], block_id);  // the head: reused first, keeps cached blocks longer
  }
}

bool BlockPool::cache_block(BlockId block_id, BlockHash hash) {
  PAGODA_CHECK(ref_counts_[checked(block_id)] > 0, "only a block in use can be cached, block {} is free", block_id);
  if (prefix_cache_ == nullptr) return false;
  if (is_cached_[size_t(block_id)]) {
    PAGODA_CHECK(hashes_[size_t(block_id)] == hash, "block {} cached under two different hashes", block_id);
    return true;
  }
  if (!prefix_cache_->insert(hash, block_id)) return false;
  hashes_[size_t(block_id)] = hash;
  is_cached_[size_t(block_id)] = 1;
  return true;
}

std::optional<BlockHash> BlockPool::block_hash(BlockId block_id) const {
  if (!is_cached_[checked(block_id)]) return std::nullopt;
  return hashes_[size_t(block_id)];
}

std::vector<BlockId> BlockPool::free_blocks_in_order() const {
  std::vector<BlockId> block_ids;
  block_ids.reserve(size_t(num_free_));
  for (int32_t id = next_[size_t(num_blocks_)]; id != num_blocks_; id = next_[size_t(id)]) block_ids.push_back(id);
  return block_ids;
}

}  // namespace pagoda
