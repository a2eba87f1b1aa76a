// KvStorage allocation.
#include "kv/kv_storage.h"

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

}  // namespace pagoda
