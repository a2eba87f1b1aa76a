// KvStorage: owns the K/V bytes of every layer for a pool of `num_blocks` blocks of `block_size` tokens, K and V each
// in its own KvDType (f32, f16, bf16, q8_0, q4_0, or INT8 with a scale per token per KV head; layout in
// kv/kv_cache_view.h), and hands the model a
// KvCacheView of them. Knows nothing of sequences; which block holds what is the
// bookkeeping's business (a block table today; the BlockPool of the paged-KV work later).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "core/types.h"
#include "kv/kv_cache_view.h"

namespace pagoda {

// Zero-filled bytes from calloc: a large block comes straight from the kernel as zero pages, each touched when it is
// first written, so a pool of gigabytes costs nothing to create (a std::vector would write every byte first, seconds at start-up, and on
// another rank in the middle of the first step). A region of 2 MiB or more starts on a 2 MiB boundary with huge
// pages advised: decode attention walks one KV head's rows a whole cache row apart, one 4 KiB page per row, and
// on 4 KiB pages each of those reads would also miss the TLB. nullptr when the allocation fails.
class ZeroedBytes {
 public:
  ZeroedBytes() = default;
  explicit ZeroedBytes(size_t bytes);
  ~ZeroedBytes();
  ZeroedBytes(ZeroedBytes&& other) noexcept;
  ZeroedBytes& operator=(ZeroedBytes&& other) noexcept;
  ZeroedBytes(const ZeroedBytes&) = delete;
  ZeroedBytes& operator=(const ZeroedBytes&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  void* allocation_ = nullptr;  // what free takes back: data_ is it rounded up to its alignment
};

template <class T>
class ZeroedArray {
 public:
  void allocate(size_t n) {
    bytes_ = ZeroedBytes(n * sizeof(T));
    PAGODA_CHECK(n == 0 || bytes_.data() != nullptr, "could not allocate {} bytes of KV cache", n * sizeof(T));
  }
  T* data() const { return static_cast<T*>(bytes_.data()); }

 private:
  ZeroedBytes bytes_;
};

class KvStorage {
 public:
  // Checks kv_types_fit first (a caller with user input reports its message before).
  KvStorage(const KvShape& shape, int32_t num_blocks, int32_t block_size, KvCacheTypes types = KvDType::kF32);

  KvCacheView view();
  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  KvCacheTypes types() const { return types_; }
  int64_t bytes_per_block() const;
  // What one block of `block_size` tokens costs for `shape`, before any storage exists (pool sizing).
  static int64_t bytes_per_block_for(const KvShape& shape, int32_t block_size, KvCacheTypes types = KvDType::kF32);
  // K and V bytes of one token in one layer (what attention reads per context position and layer).
  static int64_t bytes_per_token_layer(const KvShape& shape, KvCacheTypes types);
  // K and V bytes of one token over every layer.
  static int64_t bytes_per_token(const KvShape& shape, KvCacheTypes types) {
    return bytes_per_token_layer(shape, types) * shape.num_layers;
  }
  // Empty when `shape`'s heads can be stored in `types`; else why not ("q8_0 KV cache needs heads of a multiple of
  // 32 values; this model's have 8").
  static std::string kv_types_fit(const KvShape& shape, KvCacheTypes types);
  int64_t total_bytes() const { return bytes_per_block() * num_blocks_; }

  // Deep-copies every layer's K and V of block `src_block_id` into `dst_block_id` (a copy-on-write that
  // KvCacheManager queued in pending_copies()). The blocks must differ.
  void copy_block(BlockId src_block_id, BlockId dst_block_id);

 private:
  int32_t num_layers_;
  int32_t kv_dim_;
  int32_t num_kv_heads_;
  int32_t num_blocks_;
  int32_t block_size_;
  KvCacheTypes types_;
  bool v_in_k_;  // KvShape::v_in_k: the V side is the K side
  int64_t k_row_bytes_, v_row_bytes_;
  int64_t bytes_per_token_layer_;
  ZeroedArray<uint8_t> k_;      // [num_layers][num_blocks * block_size][k_row_bytes_]
  ZeroedArray<uint8_t> v_;      // [num_layers][num_blocks * block_size][v_row_bytes_]
  ZeroedArray<float> k_scale_;  // kInt8 K: [num_layers][num_blocks * block_size][num_kv_heads]
  ZeroedArray<float> v_scale_;  // kInt8 V: the same
};

}  // namespace pagoda
