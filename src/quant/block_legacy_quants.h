// ggml's legacy 32-value blocks beside Q4_0/Q8_0: Q4_1, Q5_0 and Q5_1, byte-compatible with GGUF tensors of those
// types, and their reference dequantization (bit-identical to ggml's dequantize_row_q4_1/q5_0/q5_1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

// Element j < 16 is the low nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]; its value is
// nibble * d + m (fp16 d and m), computed in f32 as written (a product, then a sum; never fused).
struct BlockQ4_1 {
  static constexpr int64_t kNumValues = 32;
  uint16_t d;  // fp16 step
  uint16_t m;  // fp16 offset (the block's minimum)
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2 && offsetof(BlockQ4_1, qs) == 4);

// As Q4_0 with a fifth bit per element: bit j of the little-endian u32 in qh is element j's bit 4. The value is
// (q - 16) * d, q in [0, 31].
struct BlockQ5_0 {
  static constexpr int64_t kNumValues = 32;
  uint16_t d;     // fp16 step
  uint8_t qh[4];  // fifth bits, element j at bit j of the little-endian u32
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2 && offsetof(BlockQ5_0, qs) == 6);

// Q5_0's 5-bit elements with Q4_1's affine value: q * d + m.
struct BlockQ5_1 {
  static constexpr int64_t kNumValues = 32;
  uint16_t d;  // fp16 step
  uint16_t m;  // fp16 offset
  uint8_t qh[4];
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) == 2 && offsetof(BlockQ5_1, qs) == 8);

static_assert(std::is_trivially_copyable_v<BlockQ4_1> && std::is_trivially_copyable_v<BlockQ5_0> &&
              std::is_trivially_copyable_v<BlockQ5_1>);

// x: [n / 32] blocks -> y: f32 [n]; n must be a multiple of 32.
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);

}  // namespace pagoda::quant
