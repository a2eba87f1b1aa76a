// KvCacheView: where the model reads and writes K/V. Non-owning; the bytes belong to KvStorage (src/kv).
// Layout per layer: f32 [num_slots][kv_dim], slot = block_id * block_size + offset within the block.
#pragma once

#include <cstdint>

namespace pagoda {

struct KvCacheView {
  float* k = nullptr;  // f32 [num_layers][num_slots][kv_dim]
  float* v = nullptr;  // f32 [num_layers][num_slots][kv_dim]
  int32_t num_layers = 0;
  int32_t kv_dim = 0;
  int32_t block_size = 0;
  int64_t num_slots = 0;  // num_blocks * block_size

  float* k_at(int32_t layer, int64_t slot) const { return k + (int64_t(layer) * num_slots + slot) * kv_dim; }
  float* v_at(int32_t layer, int64_t slot) const { return v + (int64_t(layer) * num_slots + slot) * kv_dim; }
};

}  // namespace pagoda
