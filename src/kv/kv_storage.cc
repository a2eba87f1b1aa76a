// KvStorage allocation.
#include "kv/kv_storage.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"

namespace pagoda {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}  // namespace

ZeroedBytes::ZeroedBytes(size_t bytes) {
  if (bytes == 0) return;
  const size_t align = bytes >= kHugePage ? kHugePage : 0;
  allocation_ = std::calloc(bytes + align, 1);
  if (allocation_ == nullptr) return;
  data_ = allocation_;
  if (align > 0) {
    data_ = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(allocation_) + align - 1) / align * align);
    // Advice only: where THP is off this is a no-op and the cache works on 4 KiB pages.
    (void)::madvise(data_, bytes, MADV_HUGEPAGE);
  }
}

ZeroedBytes::~ZeroedBytes() { std::free(allocation_); }

ZeroedBytes::ZeroedBytes(ZeroedBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), allocation_(std::exchange(other.allocation_, nullptr)) {}

ZeroedBytes& ZeroedBytes::operator=(ZeroedBytes&& other) noexcept {
  if (this != &other) {
    std::free(allocation_);
    data_ = std::exchange(other.data_, nullptr);
    allocation_ = std::exchange(other.allocation_, nullptr);
  }
  return *this;
}

KvStorage::KvStorage(const KvShape& shape, int32_t num_blocks, int32_t block_size, KvCacheTypes types)
    : num_layers_(shape.num_layers),
      kv_dim_(shape.kv_dim),
      num_kv_heads_(shape.num_kv_heads),
      num_blocks_(num_blocks),
      block_size_(block_size),
      types_(types),
      v_in_k_(shape.v_in_k),
      k_row_bytes_(kv_row_bytes(types.k, shape.kv_dim)),
      v_row_bytes_(shape.v_in_k ? 0 : kv_row_bytes(types.v, shape.kv_dim)),
      bytes_per_token_layer_(bytes_per_token_layer(shape, types)) {
  PAGODA_CHECK(num_blocks > 0 && block_size > 0);
  const std::string unfit = kv_types_fit(shape, types);
  PAGODA_CHECK(unfit.empty(), "{}", unfit);
  const size_t slots = size_t(num_layers_) * size_t(num_blocks) * size_t(block_size);
  k_.allocate(slots * size_t(k_row_bytes_));
  v_.allocate(slots * size_t(v_row_bytes_));
  if (types.k == KvDType::kInt8) k_scale_.allocate(slots * size_t(num_kv_heads_));
  if (types.v == KvDType::kInt8 && !v_in_k_) v_scale_.allocate(slots * size_t(num_kv_heads_));
}

KvCacheView KvStorage::view() {
  KvCacheView v;
  v.k_dtype = types_.k;
  v.v_dtype = types_.v;
  v.k = k_.data();
  v.v = v_in_k_ ? k_.data() : v_.data();
  v.k_scale = k_scale_.data();
  v.v_scale = v_in_k_ ? k_scale_.data() : v_scale_.data();
  v.k_row_bytes = k_row_bytes_;
  v.v_row_bytes = v_in_k_ ? k_row_bytes_ : v_row_bytes_;
  v.num_layers = num_layers_;
  v.kv_dim = kv_dim_;
  v.num_kv_heads = num_kv_heads_;
  v.block_size = block_size_;
  v.num_slots = int64_t(num_blocks_) * block_size_;
  return v;
}

int64_t KvStorage::bytes_per_token_layer(const KvShape& shape, KvCacheTypes types) {
  auto side = [&](KvDType t) {
    return kv_row_bytes(t, shape.kv_dim) + (t == KvDType::kInt8 ? shape.num_kv_heads * int64_t(sizeof(float)) : 0);
  };
  return side(types.k) + (shape.v_in_k ? 0 : side(types.v));
}

std::string KvStorage::kv_types_fit(const KvShape& shape, KvCacheTypes types) {
  if (shape.num_kv_heads <= 0 || shape.kv_dim % shape.num_kv_heads != 0) return {};
  const int32_t head_dim = shape.kv_dim / shape.num_kv_heads;
  if (shape.v_in_k && types.v != types.k)
    return fmt::format("this model's V is read from its K cache (multi-head latent attention), so the V cache type is "
                       "K's: {} V with {} K cannot be stored (give K and V the same type)",
                       kv_dtype_name(types.v), kv_dtype_name(types.k));
  for (KvDType t : {types.k, types.v}) {
    const int32_t block = kv_dtype_block_values(t);
    if (head_dim % block != 0)
      return fmt::format("{} KV cache needs heads of a multiple of {} values; this model's have {} (use f16, bf16, "
                         "int8 or f32)",
                         kv_dtype_name(t), block, head_dim);
  }
  return {};
}

int64_t KvStorage::bytes_per_block() const { return bytes_per_token_layer_ * num_layers_ * block_size_; }

int64_t KvStorage::bytes_per_block_for(const KvShape& shape, int32_t block_size, KvCacheTypes types) {
  return bytes_per_token_layer(shape, types) * shape.num_layers * block_size;
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
  copy_block_rows(k_.data(), size_t(k_row_bytes_), layers, blocks, bs, src_block_id, dst_block_id);
  if (!v_in_k_) copy_block_rows(v_.data(), size_t(v_row_bytes_), layers, blocks, bs, src_block_id, dst_block_id);
  if (types_.k == KvDType::kInt8)
    copy_block_rows(k_scale_.data(), size_t(num_kv_heads_), layers, blocks, bs, src_block_id, dst_block_id);
  if (types_.v == KvDType::kInt8 && !v_in_k_)
    copy_block_rows(v_scale_.data(), size_t(num_kv_heads_), layers, blocks, bs, src_block_id, dst_block_id);
}

}  // namespace pagoda
