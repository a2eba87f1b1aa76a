// KvStorage: owns the K/V bytes of every layer for a pool of `num_blocks` blocks of `block_size` tokens, in
// f32 or INT8 (with a scale per token per KV head; layout in model/kv_cache_view.h), and hands the model a
// KvCacheView of them. Knows nothing of sequences; which block holds what is the
// bookkeeping's business (a block table today; the BlockPool of the paged-KV work later).
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "model/kv_cache_view.h"
#include "model/model_config.h"

namespace pagoda {

class KvStorage {
 public:
  KvStorage(const ModelConfig& config, int32_t num_blocks, int32_t block_size, KvDType dtype = KvDType::kF32);

  KvCacheView view();
  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  KvDType dtype() const { return dtype_; }
  int64_t bytes_per_block() const;
  // What one block of `block_size` tokens costs for `config`, before any storage exists (pool sizing).
  static int64_t bytes_per_block_for(const ModelConfig& config, int32_t block_size, KvDType dtype = KvDType::kF32);
  // K and V bytes of one token in one layer (what attention reads per context position and layer).
  static int64_t bytes_per_token_layer(const ModelConfig& config, KvDType dtype);
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
  KvDType dtype_;
  int64_t bytes_per_token_layer_;
  std::vector<float> k_;    // kF32: [num_layers][num_blocks * block_size][kv_dim]
  std::vector<float> v_;    // same
  std::vector<int8_t> k8_;  // kInt8: [num_layers][num_blocks * block_size][kv_dim]
  std::vector<int8_t> v8_;
  std::vector<float> k_scale_;  // kInt8: [num_layers][num_blocks * block_size][num_kv_heads]
  std::vector<float> v_scale_;
};

}  // namespace pagoda
