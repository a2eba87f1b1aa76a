// KvStorage allocation.
#include "kv/kv_storage.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

KvStorage::KvStorage(const KvShape& shape, int32_t num_blocks, int32_t block_size, KvDType dtype)
    : num_layers_(shape.num_layers),
      kv_dim_(shape.kv_dim),
      num_kv_heads_(shape.num_kv_heads),
      num_blocks_(num_blocks),
      block_size_(block_size),
      dtype_(dtype),
      bytes_per_token_layer_(bytes_per_token_layer(shape, dtype)) {
  PAGODA_CHECK(num_blocks > 0 && block_size > 0);
  const size_t slots = size_t(num_layers_) * size_t(num_blocks) * size_t(block_size);
  if (dtype == KvDType::kF32) {
    k_.allocate(slots * size_t(kv_dim_));
    v_.allocate(slots * size_t(kv_dim_));
  } else {
    k8_.allocate(slots * size_t(kv_dim_));
    v8_.allocate(slots * size_t(kv_dim_));
    k_scale_.allocate(slots * size_t(num_kv_heads_));
    v_scale_.allocate(slots * size_t(num_kv_heads_));
  }
}

KvCacheView KvStorage::view() {
  KvCacheView v;
  v.dtype = dtype_;
  v.k = k_.data();
  v.v = v_.data();
  v.k8 = k8_.data();
  v.v8 = v8_.data();
  v.k_scale = k_scale_.data();
  v.v_scale = v_scale_.data();
  v.num_layers = num_layers_;
  v.kv_dim = kv_dim_;
  v.num_kv_heads = num_kv_heads_;
  v.block_size = block_size_;
  v.num_slots = int64_t(num_blocks_) * block_size_;
  return v;
}

int64_t KvStorage::bytes_per_token_layer(const KvShape& shape, KvDType dtype) {
  if (dtype == KvDType::kF32) return int64_t(2) * shape.kv_dim * int64_t(sizeof(float));
  return int64_t(2) * (shape.kv_dim + shape.num_kv_heads * int64_t(sizeof(float)));
}

int64_t KvStorage::bytes_per_block() const { return bytes_per_token_layer_ * num_layers_ * block_size_; }

int64_t KvStorage::bytes_per_block_for(const KvShape& shape, int32_t block_size, KvDType dtype) {
  return bytes_per_token_layer(shape, dtype) * shape.num_layers * block_size;
}

namespace {

// Per layer a block is block_size consecutive slots of `row` elements.
template <typename T>
void copy_block_rows(T* data, size_t row, size_t num_layers, size_t num_blocks, size_t block_size, BlockId src_block_id,
                     BlockId dst_block_id) {
  const size_t block_elems = block_size * row;
  const size_t layer_elems = num_blocks * block_elems;
  for (size_t layer = 0; layer < num_layers; ++layer) {
    const size_t src = layer * layer_elems + size_t(src_block_id) * block_elems;
    const size_t dst = layer * layer_elems + size_t(dst_block_id) * block_elems;
    std::copy_n(data + src, block_elems, data + dst);
  }
}

}  // namespace

void KvStorage::copy_block(BlockId src_block_id, BlockId dst_block_id) {
  PAGODA_CHECK(src_block_id >= 0 && src_block_id < num_blocks_ && dst_block_id >= 0 && dst_block_id < num_blocks_,
               "copy_block({}, {}) outside the pool of {} blocks", src_block_id, dst_block_id, num_blocks_);
  PAGODA_CHECK(src_block_id != dst_block_id, "copy_block of block {} onto itself", src_block_id);
  const size_t layers = size_t(num_layers_), blocks = size_t(num_blocks_), bs = size_t(block_size_);
  if (dtype_ == KvDType::kF32) {
    copy_block_rows(k_.data(), size_t(kv_dim_), layers, blocks, bs, src_block_id, dst_block_id);
    copy_block_rows(v_.data(), size_t(kv_dim_), layers, blocks, bs, src_block_id, dst_block_id);
  } else {
    copy_block_rows(k8_.data(), size_t(kv_dim_), layers, blocks, bs, src_block_id, dst_block_id);
    copy_block_rows(v8_.data(), size_t(kv_dim_), layers, blocks, bs, src_block_id, dst_block_id);
    copy_block_rows(k_scale_.data(), size_t(num_kv_heads_), layers, blocks, bs, src_block_id, dst_block_id);
    copy_block_rows(v_scale_.data(), size_t(num_kv_heads_), layers, blocks, bs, src_block_id, dst_block_id);
  }
}

}  // namespace pagoda
