// kv_bytes_per_token: the KV cache's size per token that `pagoda tune` plans with: K and V (2) x layers x KV
// heads x head dim x bytes per element. Pure arithmetic over a model's shape.
#pragma once

#include <cstdint>

#include "core/types.h"
#include "synth/model_shapes.h"

namespace pagoda::bench {

// Bytes of K and V one token occupies across all layers; `bytes_per_element` is 4 (F32), 2 (F16) or 1 (INT8,
// scales not counted).
int64_t kv_bytes_per_token(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t bytes_per_element);
// The same for a named shape (its head size: head_dim where the shape sets one, else dim / heads).
int64_t kv_bytes_per_token(const synth::ModelShape& shape, int32_t bytes_per_element);
// The same in the cache's K and V types (block types with their fp16 scales, int8 with its f32 scale per head).
int64_t kv_bytes_per_token(const synth::ModelShape& shape, KvCacheTypes types);

}  // namespace pagoda::bench
