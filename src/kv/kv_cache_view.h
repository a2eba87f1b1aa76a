// KvShape and KvCacheView: the KV cache's dimensions and where the model reads and writes K/V. Non-owning; the
// bytes belong to KvStorage. Header-only (target pagoda_kv_view) so that the model and the KV cache share these
// types without src/kv depending on src/model or the reverse.
// Layout per layer and side (K, then V the same way with its own type), slot = block_id * block_size + offset:
//   bytes [num_slots][row_bytes], a slot's row = num_kv_heads heads of head_dim values in the side's KvDType
//   (core/types.h: f32, f16, bf16, q8_0 / q4_0 blocks of 32 values, int8), row_bytes = kv_row_bytes(type, kv_dim);
//   kInt8 adds one f32 scale per slot per KV head ([num_slots][num_kv_heads]): value = int8 * scale, symmetric,
//   scale = max|x| / 127 of that head's row.
// A hybrid model's recurrent layers keep a fixed-size state per sequence instead of K/V per token: `state` holds
// num_slots slots of floats_per_slot f32 each (the model's own layout within a slot), a sequence's slot named by
// BatchView::state_slots. Only the attention layers have K/V rows (num_layers counts those).
#pragma once

#include <cstdint>

#include "core/types.h"

namespace pagoda {

// What the KV cache stores per token: num_layers x (K and V of kv_dim values), num_kv_heads of them per row.
struct KvShape {
  int32_t num_layers = 0;
  int32_t kv_dim = 0;
  int32_t num_kv_heads = 0;
  // V is read from K's rows (multi-head latent attention's latent): no V bytes are stored, the view's V side is its
  // K side, and V's type is K's.
  bool v_in_k = false;
};

// The recurrent states of a hybrid model (kv/state_storage.h owns them); empty (no slots) for any other model.
struct RecurrentStateView {
  float* data = nullptr;  // [num_slots][floats_per_slot]
  int64_t floats_per_slot = 0;
  int32_t num_slots = 0;

  float* slot(int32_t s) const { return data + int64_t(s) * floats_per_slot; }
};

struct KvCacheView {
  KvDType k_dtype = KvDType::kF32;
  KvDType v_dtype = KvDType::kF32;
  uint8_t* k = nullptr;  // [num_layers][num_slots][k_row_bytes]
  uint8_t* v = nullptr;  // [num_layers][num_slots][v_row_bytes]
  float* k_scale = nullptr;  // kInt8 K: [num_layers][num_slots][num_kv_heads]
  float* v_scale = nullptr;  // kInt8 V: the same
  int64_t k_row_bytes = 0;
  int64_t v_row_bytes = 0;
  int32_t num_layers = 0;
  int32_t kv_dim = 0;
  int32_t num_kv_heads = 0;
  int32_t block_size = 0;
  int64_t num_slots = 0;  // num_blocks * block_size
  RecurrentStateView state;

  KvCacheTypes types() const { return {k_dtype, v_dtype}; }
  int64_t scale_row(int32_t layer, int64_t slot) const { return (int64_t(layer) * num_slots + slot) * num_kv_heads; }
  uint8_t* k_row(int32_t layer, int64_t slot) const { return k + (int64_t(layer) * num_slots + slot) * k_row_bytes; }
  uint8_t* v_row(int32_t layer, int64_t slot) const { return v + (int64_t(layer) * num_slots + slot) * v_row_bytes; }
  // A side's row as f32 values (that side kF32) or int8 values (kInt8).
  float* k_at(int32_t layer, int64_t slot) const { return reinterpret_cast<float*>(k_row(layer, slot)); }
  float* v_at(int32_t layer, int64_t slot) const { return reinterpret_cast<float*>(v_row(layer, slot)); }
  int8_t* k8_at(int32_t layer, int64_t slot) const { return reinterpret_cast<int8_t*>(k_row(layer, slot)); }
  int8_t* v8_at(int32_t layer, int64_t slot) const { return reinterpret_cast<int8_t*>(v_row(layer, slot)); }
  float* k_scale_at(int32_t layer, int64_t slot) const { return k_scale + scale_row(layer, slot); }
  float* v_scale_at(int32_t layer, int64_t slot) const { return v_scale + scale_row(layer, slot); }
};

}  // namespace pagoda
