// ggml's 4-bit non-linear blocks: IQ4_NL (32 values, an fp16 scale, a fixed 16-entry codebook), IQ4_XS (256 values,
// IQ4_NL's codebook under 6-bit sub-block scales) and MXFP4 (the OCP microscaling format: 32 FP4 E2M1 values and a
// shared power-of-two E8M0 scale; gpt-oss's experts), byte-compatible with GGUF tensors of those types, and their
// reference dequantization (bit-identical to ggml's dequantize_row_iq4_nl/iq4_xs/mxfp4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

// IQ4_NL's (and IQ4_XS's) codebook: nibble -> int8 level, denser near zero (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4NlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Element j < 16 is the low nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]; its value is
// d * kIq4NlLevels[nibble].
struct BlockIQ4_NL {
  static constexpr int64_t kNumValues = 32;
  uint16_t d;  // fp16 scale
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18 && alignof(BlockIQ4_NL) == 2 && offsetof(BlockIQ4_NL, qs) == 2);

// Eight 32-value sub-blocks, each laid out as an IQ4_NL block's nibbles (16 bytes of qs); sub-block s has the
// 6-bit scale ls = nibble (s % 2) of scales_l[s / 2] | bits 2s..2s+1 of scales_h << 4, and its values are
// (d * (ls - 32)) * kIq4NlLevels[nibble].
struct BlockIQ4_XS {
  static constexpr int64_t kNumValues = 256;
  uint16_t d;         // fp16 super-block scale
  uint16_t scales_h;  // high 2 bits of the eight sub-block scales
  uint8_t scales_l[kNumValues / 64];
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136 && alignof(BlockIQ4_XS) == 2 && offsetof(BlockIQ4_XS, qs) == 8);

// Element j < 16 is the low nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]. A nibble is an FP4 E2M1
// number (bit 3 the sign, two exponent bits, one mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6) and e an E8M0 exponent:
// value = e2m1 * 2^(e - 127). (e = 255, NaN in the OCP spec, is read as 2^128, as ggml reads it.)
struct BlockMXFP4 {
  static constexpr int64_t kNumValues = 32;
  uint8_t e;  // E8M0 shared scale
  uint8_t qs[kNumValues / 2];
};
static_assert(sizeof(BlockMXFP4) == 17 && alignof(BlockMXFP4) == 1);

// Twice each E2M1 nibble's value, an exact integer, and the MXFP4 scale halved to match, 2^(e - 128) as an f32
// (e = 0 and 1 the subnormals 2^-128 and 2^-127): value = kE2M1Doubled[nibble] * mxfp4_half_scale(e), exactly.
inline constexpr int8_t kE2M1Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
float mxfp4_half_scale(uint8_t e);

static_assert(std::is_trivially_copyable_v<BlockIQ4_NL> && std::is_trivially_copyable_v<BlockIQ4_XS> &&
              std::is_trivially_copyable_v<BlockMXFP4>);

// x: blocks -> y: f32 [n]; n must be a multiple of the block's kNumValues.
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n);
void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n);

}  // namespace pagoda::quant
