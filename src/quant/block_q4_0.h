// BlockQ4_0: ggml's Q4_0 block (32 4-bit values sharing one fp16 scale), byte-compatible with GGUF tensors of
// type Q4_0, and its reference quantize/dequantize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

// Element j < 16 is the low nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]; its value is
// (nibble - 8) * fp16_to_float(d), so a block spans [-8d, 7d].
struct BlockQ4_0 {
  static constexpr int64_t kNumValues = 32;  // elements per block (ggml's QK4_0)
  uint16_t d;                                // fp16 scale
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "GGUF Q4_0 blocks are 2 + 16 bytes, unpadded");
static_assert(alignof(BlockQ4_0) == 2);
static_assert(offsetof(BlockQ4_0, qs) == 2);
static_assert(std::is_standard_layout_v<BlockQ4_0> && std::is_trivially_copyable_v<BlockQ4_0>);

// x: f32 [n] -> y: [n / 32] blocks; n must be a multiple of 32. Same bytes as ggml's quantize_row_q4_0_ref for
// finite input: the first element of largest magnitude, max, sets d = max / -8 (so max itself maps to nibble 0
// and is reproduced exactly up to the fp16 rounding of d), and q = min(15, trunc(x / d + 8.5)). An all-zero
// block gets d = -0.0 (fp16 0x8000) and every nibble 8, as in ggml. Non-finite inputs give unspecified (but
// defined) values.
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);

// x: [n / 32] blocks -> y: f32 [n]; n must be a multiple of 32.
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);

}  // namespace pagoda::quant
