// KvShape and KvCacheView: the KV cache's dimensions and where the model reads and writes K/V. Non-owning; the
// bytes belong to KvStorage. Header-only (target pagoda_kv_view) so that the model and the KV cache share these
// types without src/kv depending on src/model or the reverse.
// Layout per layer, slot = block_id * block_size + offset within the block:
//   kF32:  f32 [num_slots][kv_dim] for K and for V.
//   kInt8: int8 [num_slots][kv_dim] for K and for V, plus one f32 scale per slot per KV head
//          ([num_slots][num_kv_heads]): value = int8 * scale, symmetric, scale = max|x| / 127 of that head's row.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class KvDType : uint8_t { kF32, kInt8 };

// "f32" or "int8", as kv_cache.dtype and --kv-cache-dtype spell them; nullopt for anything else.
inline std::optional<KvDType> parse_kv_dtype(std::string_view name) {
  if (name == "f32") return KvDType::kF32;
  if (name == "int8") return KvDType::kInt8;
  return std::nullopt;
}
inline const char* kv_dtype_name(KvDType dtype) { return dtype == KvDType::kInt8 ? "int8" : "f32"; }

// What the KV cache stores per token: num_layers x (K and V of kv_dim values), num_kv_heads of them per row.
struct KvShape {
  int32_t num_layers = 0;
  int32_t kv_dim = 0;
  int32_t num_kv_heads = 0;
};

struct KvCacheView {
  KvDType dtype = KvDType::kF32;
  float* k = nullptr;  // kF32: [num_layers][num_slots][kv_dim]
  float* v = nullptr;
  int8_t* k8 = nullptr;  // kInt8: [num_layers][num_slots][kv_dim]
  int8_t* v8 = nullptr;
  float* k_scale = nullptr;  // kInt8: [num_layers][num_slots][num_kv_heads]
  float* v_scale = nullptr;
  int32_t num_layers = 0;
  int32_t kv_dim = 0;
  int32_t num_kv_heads = 0;
  int32_t block_size = 0;
  int64_t num_slots = 0;  // num_blocks * block_size

  int64_t row(int32_t layer, int64_t slot) const { return (int64_t(layer) * num_slots + slot) * kv_dim; }
  int64_t scale_row(int32_t layer, int64_t slot) const { return (int64_t(layer) * num_slots + slot) * num_kv_heads; }
  float* k_at(int32_t layer, int64_t slot) const { return k + row(layer, slot); }
  float* v_at(int32_t layer, int64_t slot) const { return v + row(layer, slot); }
  int8_t* k8_at(int32_t layer, int64_t slot) const { return k8 + row(layer, slot); }
  int8_t* v8_at(int32_t layer, int64_t slot) const { return v8 + row(layer, slot); }
  float* k_scale_at(int32_t layer, int64_t slot) const { return k_scale + scale_row(layer, slot); }
  float* v_scale_at(int32_t layer, int64_t slot) const { return v_scale + scale_row(layer, slot); }
};

}  // namespace pagoda
