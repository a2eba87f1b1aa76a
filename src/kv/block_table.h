// BlockTable: one sequence's logical -> physical block map; logical block j holds positions
// [j * block_size, (j + 1) * block_size). Owns only the id list; the blocks' ref counts are the BlockPool's,
// and KvCacheManager keeps the two in step. Ids of blocks already written never change, except that a
// shared partial last block is swapped for a private copy (copy-on-write) before the sequence writes into it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"

namespace pagoda {

class BlockTable {
 public:
  explicit BlockTable(int32_t block_size);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return int32_t(block_ids_.size()); }
  int32_t num_slots() const { return num_blocks() * block_size_; }  // tokens the blocks can hold
  bool empty() const { return block_ids_.empty(); }
  std::span<const BlockId> block_ids() const { return block_ids_; }
  BlockId block_id(int32_t block_idx) const;

  // Where the K/V of `pos` lives: block_id * block_size + pos % block_size (BatchView::slot_ids).
  int32_t slot_id(Pos pos) const;
  // Blocks needed to hold `num_tokens` tokens.
  int32_t num_blocks_for(int32_t num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }

  void append(BlockId block_id) { block_ids_.push_back(block_id); }
  void replace(int32_t block_idx, BlockId block_id);
  void clear() { block_ids_.clear(); }
  void truncate(int32_t num_blocks) { block_ids_.resize(size_t(num_blocks)); }  // keeps the first num_blocks

 private:
  int32_t block_size_;
  std::vector<BlockId> block_ids_;  // [num_blocks] physical ids, logical order
};

}  // namespace pagoda
