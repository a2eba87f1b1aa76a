// KV bytes per token from a model's shape.
#include "bench/kv_bytes_per_token.h"

namespace pagoda::bench {

int64_t kv_bytes_per_token(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t bytes_per_element) {
  return 2 * int64_t(num_layers) * num_kv_heads * head_dim * bytes_per_element;
}

int64_t kv_bytes_per_token(const synth::ModelShape& shape, int32_t bytes_per_element) {
  return kv_bytes_per_token(shape.num_layers, shape.num_kv_heads, shape.head_size(), bytes_per_element);
}

int64_t kv_bytes_per_token(const synth::ModelShape& shape, KvCacheTypes types) {
  const int64_t kv_dim = int64_t(shape.num_kv_heads) * shape.head_size();
  auto side = [&](KvDType t) {
    return kv_row_bytes(t, kv_dim) + (t == KvDType::kInt8 ? shape.num_kv_heads * int64_t(sizeof(float)) : 0);
  };
  return int64_t(shape.num_layers) * (side(types.k) + side(types.v));
}

}  // namespace pagoda::bench
