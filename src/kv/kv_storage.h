// KvStorage: owns the K/V bytes of every layer for a pool of `num_blocks` blocks of `block_size` tokens and
// hands the model a KvCacheView of them. Knows nothing of sequences; which block holds what is the
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
  KvStorage(const ModelConfig& config, int32_t num_blocks, int32_t block_size);

  KvCacheView view();
  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int64_t bytes_per_block() const;
  // What one block of `block_size` tokens costs for `config`, before any storage exists (pool sizing).
  static int64_t bytes_per_block_for(const ModelConfig& config, int32_t block_size);
  int64_t total_bytes() const { return bytes_per_block() * num_blocks_; }

  // Deep-copies every layer's K and V of block `src_block_id` into `dst_block_id` (a copy-on-write that
  // KvCacheManager queued in pending_copies()). The blocks must differ.
  void copy_block(BlockId src_block_id, BlockId dst_block_id);

 private:
  int32_t num_layers_;
  int32_t kv_dim_;
  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<float> k_;  // f32 [num_layers][num_blocks * block_size][kv_dim]
  std::vector<float> v_;  // same
};

}  // namespace pagoda
