// PrefixCache: linear probing with backward-shift deletion (no tombstones, so probe chains never degrade).
#include "kv/prefix_cache.h"

#include <bit>

#include "core/check.h"

namespace pagoda {

PrefixCache::PrefixCache(int32_t num_blocks) : num_blocks_(num_blocks) {
  PAGODA_CHECK(num_blocks > 0);
  // A load factor of at most 1/2 keeps linear-probe chains short.
  const size_t capacity = std::bit_ceil(size_t(num_blocks) * 2);
  mask_ = capacity - 1;
  hashes_.assign(capacity, 0);
  block_ids_.assign(capacity, -1);
}

std::optional<size_t> PrefixCache::find_slot(BlockHash hash) const {
  for (size_t slot = home_slot(hash);; slot = (slot + 1) & mask_) {
    if (block_ids_[slot] < 0) return std::nullopt;
    if (hashes_[slot] == hash) return slot;
  }
}

std::optional<BlockId> PrefixCache::find(BlockHash hash) const {
  const std::optional<size_t> slot = find_slot(hash);
  if (!slot) return std::nullopt;
  return block_ids_[*slot];
}

bool PrefixCache::insert(BlockHash hash, BlockId block_id) {
  PAGODA_CHECK(block_id >= 0 && block_id < num_blocks_, "block {} outside the pool of {}", block_id, num_blocks_);
  size_t slot = home_slot(hash);
  for (; block_ids_[slot] >= 0; slot = (slot + 1) & mask_)
    if (hashes_[slot] == hash) return false;
  PAGODA_CHECK(num_entries_ < num_blocks_, "more indexed hashes than blocks: a block was indexed twice");
  hashes_[slot] = hash;
  block_ids_[slot] = block_id;
  ++num_entries_;
  return true;
}

void PrefixCache::erase(BlockHash hash, BlockId block_id) {
  const std::optional<size_t> found = find_slot(hash);
  PAGODA_CHECK(found && block_ids_[*found] == block_id, "hash {:x} is not indexed to block {}", hash, block_id);
  size_t hole = *found;
  // Shift later entries of the probe chain back into the hole unless that would move one before its home.
  for (size_t slot = (hole + 1) & mask_; block_ids_[slot] >= 0; slot = (slot + 1) & mask_) {
    const size_t home = home_slot(hashes_[slot]);
    const bool home_in_hole_to_slot = hole <= slot ? (hole < home && home <= slot) : (hole < home || home <= slot);
    if (home_in_hole_to_slot) continue;
    hashes_[hole] = hashes_[slot];
    block_ids_[hole] = block_ids_[slot];
    hole = slot;
  }
  block_ids_[hole] = -1;
  --num_entries_;
}

PrefixHit PrefixCache::lookup(std::span<const TokenId> tokens, int32_t block_size, uint64_t extra_key) const {
  PAGODA_CHECK(block_size > 0);
  PrefixHit hit;
  hit.num_prompt_tokens = int32_t(tokens.size());
  if (tokens.empty()) return hit;
  const size_t max_hit_blocks = (tokens.size() - 1) / size_t(block_size);
  BlockHash parent_hash = kRootBlockHash;
  for (size_t block_idx = 0; block_idx < max_hit_blocks; ++block_idx) {
    parent_hash =
        hash_block(parent_hash, tokens.subspan(block_idx * size_t(block_size), size_t(block_size)), extra_key);
    const std::optional<BlockId> block_id = find(parent_hash);
    // A chain is only usable from its start, so the first miss ends the hit.
    if (!block_id) break;
    hit.block_ids.push_back(*block_id);
    hit.block_hashes.push_back(parent_hash);
  }
  hit.num_cached_tokens = int32_t(hit.block_ids.size()) * block_size;
  return hit;
}

}  // namespace pagoda
