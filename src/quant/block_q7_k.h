// BlockQ7_K: pagoda's own in-memory carrier super-block (256 values) for ggml's IQ2_XXS, IQ2_XS and IQ2_S, whose
// decoded coordinates (up to 43) need a seventh bit that Q6_K lacks: Q6_K's layout of d, sixteen signed scales and
// one offset quant per value, with each quant a whole byte. Made at load (quant/kquant_carrier.h), never written to
// a file; its 8-row interleaved copy is BlockQ7_Kx8 (quant/block_kquant_x8.h). Must not know the i-quants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_kquants.h"

namespace pagoda::quant {

// value i = d * scales[i / 16] * (q[i] - 64), q in [0, 127].
struct BlockQ7_K {
  uint16_t d;                 // fp16
  int8_t scales[kQK_K / 16];  // per 16-value sub-block
  uint8_t q[kQK_K];           // offset quants
};
static_assert(sizeof(BlockQ7_K) == 274 && alignof(BlockQ7_K) == 2);
static_assert(std::is_trivially_copyable_v<BlockQ7_K>);

inline constexpr int kQ7Offset = 64;

// x: super-blocks -> y: f32 [n], value = (d * scale) * (q - 64); n must be a multiple of 256.
void dequantize_row_q7_K(const BlockQ7_K* x, float* y, int64_t n);

}  // namespace pagoda::quant
