// ggml's K-quant super-blocks (256 values each): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the Q8_K activation block they
// pair with, byte-compatible with GGUF tensors of those types, and their reference dequantization (bit-identical to
// ggml's dequantize_row_q2_K ... q8_K: the same f32 operations in the same order, never fused).
//
// A super-block splits into sub-blocks (16 of 16 values for Q2_K, Q3_K and Q6_K; 8 of 32 for Q4_K and Q5_K), each
// with a small integer scale (and for Q2_K, Q4_K, Q5_K a min) that the super-block's fp16 d (and dmin) multiply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

inline constexpr int64_t kQK_K = 256;  // values per K-quant super-block (ggml's QK_K)

// Q2_K: value = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4), q in [0, 3], s = the value's 16-value
// sub-block. Values 128h + 32g + l (h < 2 halves, g < 4 bit pairs, l < 32) take bits 2g..2g+1 of qs[32h + l].
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // per sub-block: low nibble the scale, high nibble the min
  uint8_t qs[kQK_K / 4];       // 2-bit quants, four per byte
  uint16_t d;                  // fp16 multiplier of the scales
  uint16_t dmin;               // fp16 multiplier of the mins
};
static_assert(sizeof(BlockQ2_K) == 84 && alignof(BlockQ2_K) == 2 && offsetof(BlockQ2_K, d) == 80);

// Q3_K: value = d * (scale6[s] - 32) * (q - 4 * !high), q the two low bits as Q2_K places them and high bit g + 4h
// of hmask[l] (l < 32 the position within the half's 32 columns). The sixteen 6-bit scales are packed in 12 bytes:
// scale s's low nibble is the nibble s/8 of scales[s % 8] (low nibble for s < 8), its two high bits are bits
// 2 * (s / 4) .. +1 of scales[8 + s % 4].
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // third (high) bit of each quant
  uint8_t qs[kQK_K / 4];     // low 2 bits
  uint8_t scales[12];        // sixteen 6-bit scales, biased by 32
  uint16_t d;                // fp16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110 && alignof(BlockQ3_K) == 2 && offsetof(BlockQ3_K, d) == 108);
// Q3_K's sixteen 6-bit scales from their 12 packed bytes, unbiased (-32 .. 31).
void q3_K_scales(const uint8_t* packed, int scales[16]);

// The 6-bit scale and min of sub-block j (< 8) of Q4_K and Q5_K, packed in 12 bytes: for j < 4 the low six bits of
// scales[j] (scale) and scales[j + 4] (min); for j >= 4 the nibbles of scales[j + 4] (scale low, min high) below
// the top two bits of scales[j - 4] (scale) and scales[j] (min).
void kquant_scale_min(const uint8_t* scales, int j, uint8_t* scale, uint8_t* min);

// Q4_K: value = d * scale[s] * q - dmin * min[s], q in [0, 15], s = the value's 32-value sub-block. Values
// 64p + l (l < 32) are the low nibbles of qs[32p + l], values 64p + 32 + l their high nibbles.
struct BlockQ4_K {
  uint16_t d;          // fp16 multiplier of the scales
  uint16_t dmin;       // fp16 multiplier of the mins
  uint8_t scales[12];  // 8 scales and 8 mins, 6 bits each (kquant_scale_min)
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 2 && offsetof(BlockQ4_K, qs) == 16);

// Q5_K: Q4_K with a fifth bit: value 64p + l takes bit 2p of qh[l], value 64p + 32 + l bit 2p + 1 (l < 32), each
// worth 16; q in [0, 31].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];  // fifth bits
  uint8_t qs[kQK_K / 2];  // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 2 && offsetof(BlockQ5_K, qs) == 48);

// Q6_K: value = d * scales[s] * (q - 32), q in [0, 63], s = the value's 16-value sub-block (int8 scales). In each
// half h (128 values) at column l < 32, the four values l, l + 32, l + 64, l + 96 take ql[64h + l] low nibble,
// ql[64h + 32 + l] low nibble, ql[64h + l] high nibble, ql[64h + 32 + l] high nibble, and bit pairs 0, 2, 4, 6
// of qh[32h + l] as their top two bits.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits
  int8_t scales[kQK_K / 16];  // per 16-value sub-block
  uint16_t d;                 // fp16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 2 && offsetof(BlockQ6_K, d) == 208);

// Q8_K: ggml's activation block for K-quant dot products. value = d * qs[j]; bsums[g] is the sum of qs[16g..16g+15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292 && alignof(BlockQ8_K) == 4 && offsetof(BlockQ8_K, bsums) == 260);

static_assert(std::is_trivially_copyable_v<BlockQ2_K> && std::is_trivially_copyable_v<BlockQ3_K> &&
              std::is_trivially_copyable_v<BlockQ4_K> && std::is_trivially_copyable_v<BlockQ5_K> &&
              std::is_trivially_copyable_v<BlockQ6_K> && std::is_trivially_copyable_v<BlockQ8_K>);

// x: [n / 256] blocks -> y: f32 [n]; n must be a multiple of 256.
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n);
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace pagoda::quant
