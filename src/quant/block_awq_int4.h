// BlockAwqInt4<G>: AWQ-style group-wise 4-bit weights, asymmetric with an integer zero point: a group of G
// consecutive values of one row (G = 32, 64 or 128) shares an fp16 scale d and a zero point z in [0, 15], and
// value j is (q[j] - z) * d with q[j] in [0, 15]. The activation-aware part of AWQ (a per-input-channel scale
// folded into the weights before they are quantized here) lives in awq_scale_search.h; this file only knows
// groups. Rows hold whole groups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

// Nibble order: the group is G / 32 sub-blocks of 32 values, each in Q4_0's order: value 32k + j (j < 16) is
// the low nibble of qs[16k + j], value 32k + 16 + j the high nibble of qs[16k + j]. The AVX2 kernel unpacks a
// sub-block with one shift and one mask, and each sub-block meets one Q8_0 block of activations.
template <int64_t kGroup>
struct BlockAwqInt4 {
  static_assert(kGroup == 32 || kGroup == 64 || kGroup == 128);
  static constexpr int64_t kNumValues = kGroup;
  static constexpr int64_t kNumSubBlocks = kGroup / 32;
  uint16_t d;        // fp16 scale
  uint8_t zero;      // zero point z, 0..15
  uint8_t reserved;  // always 0; keeps qs 2-byte aligned and the block a whole number of 16-bit words
  uint8_t qs[kGroup / 2];
};
using BlockAwqInt4G32 = BlockAwqInt4<32>;
using BlockAwqInt4G64 = BlockAwqInt4<64>;
using BlockAwqInt4G128 = BlockAwqInt4<128>;
static_assert(sizeof(BlockAwqInt4G32) == 20 && sizeof(BlockAwqInt4G64) == 36 && sizeof(BlockAwqInt4G128) == 68,
              "4 header bytes (d, zero, reserved) and G / 2 bytes of nibbles, unpadded");
static_assert(offsetof(BlockAwqInt4G32, zero) == 2 && offsetof(BlockAwqInt4G32, qs) == 4);
static_assert(offsetof(BlockAwqInt4G128, qs) == 4 && alignof(BlockAwqInt4G128) == 2);
static_assert(std::is_standard_layout_v<BlockAwqInt4G64> && std::is_trivially_copyable_v<BlockAwqInt4G64>);

// x: f32 [n] -> y: [n / G] blocks; n a multiple of G. Per group (AWQ's min-max quantizer, with the range
// widened to contain 0 so the zero point always fits): lo = min(0, min x), hi = max(0, max x), d =
// fp16((hi - lo) / 15), z = clamp(round(-lo / d), 0, 15), q = clamp(round(x / d) + z, 0, 15) with d the
// fp16-rounded scale, so |x - (q - z) * d| <= d / 2 up to the fp16 rounding of d. An all-zero group gets d = 0,
// z = 0, q = 0. Non-finite inputs give unspecified (but defined) values.
template <int64_t kGroup>
void quantize_row_awq_int4(const float* x, BlockAwqInt4<kGroup>* y, int64_t n);

// x: [n / G] blocks -> y: f32 [n]; n a multiple of G.
template <int64_t kGroup>
void dequantize_row_awq_int4(const BlockAwqInt4<kGroup>* x, float* y, int64_t n);

// The same for a group size known only at run time (32, 64 or 128): y points at [n / group] blocks.
void quantize_row_awq_int4(const float* x, void* y, int64_t n, int64_t group);
void dequantize_row_awq_int4(const void* x, float* y, int64_t n, int64_t group);
// Bytes of a row of n values (n a multiple of group).
int64_t awq_int4_row_bytes(int64_t n, int64_t group);

}  // namespace pagoda::quant
