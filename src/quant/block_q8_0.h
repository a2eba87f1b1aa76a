// BlockQ8_0: ggml's Q8_0 block (32 int8 values sharing one fp16 scale), byte-compatible with GGUF tensors of
// type Q8_0, and its reference quantize/dequantize. pagoda also uses Q8_0 for activations that are quantized on
// the fly before an integer matmul, so the rounding here is the one every kernel must reproduce bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

// Value j of the block is qs[j] * fp16_to_float(d). The quantizer never writes -128 (|qs[j]| <= 127), which the
// AVX2 matmuls rely on for activations; weights from a foreign file may hold -128 and are still exact.
struct BlockQ8_0 {
  static constexpr int64_t kNumValues = 32;  // elements per block (ggml's QK8_0)
  uint16_t d;                                // fp16 scale
  int8_t qs[kNumValues];
};
static_assert(sizeof(BlockQ8_0) == 34, "GGUF Q8_0 blocks are 2 + 32 bytes, unpadded");
static_assert(alignof(BlockQ8_0) == 2);
static_assert(offsetof(BlockQ8_0, qs) == 2);
static_assert(std::is_standard_layout_v<BlockQ8_0> && std::is_trivially_copyable_v<BlockQ8_0>);

// x: f32 [n] -> y: [n / 32] blocks; n must be a multiple of 32. Same bytes as ggml's quantize_row_q8_0_ref for
// finite input: d = amax / 127, q = roundf(x / d) (half away from zero, computed as x * (1/d)); an all-zero
// block gets d = 0 and q = 0. Scales above fp16's range (amax > 127 * 65504) become inf, as in ggml. Non-finite
// inputs give unspecified (but defined) values.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);

// x: [n / 32] blocks -> y: f32 [n]; n must be a multiple of 32.
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);

}  // namespace pagoda::quant
