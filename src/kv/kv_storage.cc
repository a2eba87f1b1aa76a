// KvStorage allocation.
#include "kv/kv_storage.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

KvStorage::KvStorage(const ModelConfig& config, int32_t num_blocks, int32_t block_size)
    : num_layers_(config.num_layers), kv_dim_(config.kv_dim()), num_blocks_(num_blocks), block_size_(block_size) {
  PAGODA_CHECK(num_blocks > 0 && block_size > 0);
  const size_t n = size_t(num_layers_) * size_t(num_blocks) * size_t(block_size) * size_t(kv_dim_);
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

KvCacheView KvStorage::view() {
  return KvCacheView{k_.data(), v_.data(), num_layers_, kv_dim_, block_size_, int64_t(num_blocks_) * block_size_};
}

int64_t KvStorage::bytes_per_block() const {
  return int64_t(2) * num_layers_ * block_size_ * kv_dim_ * int64_t(sizeof(float));
}

int64_t KvStorage::bytes_per_block_for(const ModelConfig& config, int32_t block_size) {
  return int64_t(2) * config.num_layers * block_size * config.kv_dim() * int64_t(sizeof(float));
}

void KvStorage::copy_block(BlockId src_block_id, BlockId dst_block_id) {
  PAGODA_CHECK(src_block_id >= 0 && src_block_id < num_blocks_ && dst_block_id >= 0 && dst_block_id < num_blocks_,
               "copy_block({}, {}) outside the pool of {} blocks", src_block_id, dst_block_id, num_blocks_);
  PAGODA_CHECK(src_block_id != dst_block_id, "copy_block of block {} onto itself", src_block_id);
  // Per layer a block is block_size consecutive slots of kv_dim floats.
  const size_t block_floats = size_t(block_size_) * size_t(kv_dim_);
  const size_t layer_floats = size_t(num_blocks_) * block_floats;
  for (size_t layer = 0; layer < size_t(num_layers_); ++layer) {
    const size_t src = layer * layer_floats + size_t(src_block_id) * block_floats;
    const size_t dst = layer * layer_floats + size_t(dst_block_id) * block_floats;
    std::copy_n(k_.begin() + ptrdiff_t(src), block_floats, k_.begin() + ptrdiff_t(dst));
    std::copy_n(v_.begin() + ptrdiff_t(src), block_floats, v_.begin() + ptrdiff_t(dst));
  }
}

}  // namespace pagoda
