// BlockTable: checked access and slot arithmetic.
#include "kv/block_table.h"

#include "core/check.h"

namespace pagoda {

BlockTable::BlockTable(int32_t block_size) : block_size_(block_size) {
  PAGODA_CHECK(block_size > 0, "block size must be positive, got {}", block_size);
}

BlockId BlockTable::block_id(int32_t block_idx) const {
  PAGODA_CHECK(block_idx >= 0 && block_idx < num_blocks(), "logical block {} of {}", block_idx, num_blocks());
  return block_ids_[size_t(block_idx)];
}

int32_t BlockTable::slot_id(Pos pos) const {
  PAGODA_CHECK(pos >= 0 && pos < num_slots(), "position {} outside the {} slots of this sequence", pos, num_slots());
  return block_ids_[size_t(pos / block_size_)] * block_size_ + pos % block_size_;
}

void BlockTable::replace(int32_t block_idx, BlockId block_id) {
  PAGODA_CHECK(block_idx >= 0 && block_idx < num_blocks(), "logical block {} of {}", block_idx, num_blocks());
  block_ids_[size_t(block_idx)] = block_id;
}

}  // namespace pagoda
