// ggml's lattice i-quant super-blocks (256 values each): IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS and IQ2_S,
// byte-compatible with GGUF tensors of those types, their reference dequantization (bit-identical to ggml's
// dequantize_row_*: the same f32 operations in the same order), and their blocks decoded to integers
// (DecodedIquantBlock), which quant/kquant_carrier.h re-encodes for the Q6_K kernels (IQ2's coordinates, up to 43,
// for pagoda's Q7_K ones). The grids are in quant/lattice_grids.h. No kernel and no quantizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_kquants.h"

namespace pagoda::quant {

// IQ3_XXS: eight 32-value sub-blocks. Sub-block s reads qs[8s .. 8s + 7] as grid indices (kIq3XxsGrid; each gives 4
// values) and the u32 w at qs[64 + 4s] (little-endian): its top 4 bits are ls, and bits 7l .. 7l + 6 (l < 4) the
// sign field (iq_signs_of) of values 8l .. 8l + 7. value = ((d * (0.5 + ls)) * 0.5) * grid * sign.
struct BlockIQ3_XXS {
  uint16_t d;  // fp16
  uint8_t qs[3 * kQK_K / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98 && alignof(BlockIQ3_XXS) == 2);

// IQ3_S: eight 32-value sub-blocks. Value 32s + 8l + 4k + j (l < 4, k < 2, j < 4) is coordinate j of grid point
// qs[8s + 2l + k] | bit (2l + k) of qh[s] << 8 (kIq3SGrid), negative when bit 4k + j of signs[4s + l] is set, times
// d * (1 + 2 * ls), ls the nibble s % 2 of scales[s / 2].
struct BlockIQ3_S {
  uint16_t d;  // fp16
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t signs[kQK_K / 8];
  uint8_t scales[kQK_K / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110 && alignof(BlockIQ3_S) == 2);

// IQ1_S: eight 32-value sub-blocks. qh[s]: bits 3l .. 3l + 2 the high bits of group l's grid index (group l < 4 of
// 8 values, low bits qs[4s + l], kIq1SGrid), bits 12..14 ls, bit 15 the delta's sign. value = (d * (2 * ls + 1)) *
// (coordinate + delta), delta = +-1/8.
struct BlockIQ1_S {
  uint16_t d;  // fp16
  uint8_t qs[kQK_K / 8];
  uint16_t qh[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_S) == 50 && alignof(BlockIQ1_S) == 2);

// IQ1_M: eight 32-value sub-blocks of two 16-value halves. Group g (< 32, 8 values) has grid index qs[g] | three
// bits of qh[g / 2] (bits 0..2 for an even g, 4..6 for an odd one) << 8 and its delta's sign in bit 3 (even) or 7
// (odd) of the same byte. The scales, as four u16 words w: half h (< 16) has ls = bits 3 * (h % 4) .. + 2 of
// w[h / 4]; the fp16 d is the top nibbles of w[0..3], w[0]'s lowest. value = (d * (2 * ls + 1)) * (coordinate +
// delta).
struct BlockIQ1_M {
  uint8_t qs[kQK_K / 8];
  uint8_t qh[kQK_K / 16];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_M) == 56 && alignof(BlockIQ1_M) == 1);
// IQ2_XXS: eight 32-value sub-blocks; sub-block s is two u32 words a = qs[4s], qs[4s + 1] and b = qs[4s + 2],
// qs[4s + 3] (u16 halves, little-endian): byte l (< 4) of a is group l's grid index (kIq2XxsGrid, 8 values), bits
// 7l .. 7l + 6 of b its sign field (iq_signs_of), b's top 4 bits ls. value = ((d * (0.5 + ls)) * 0.25) * grid * sign.
struct BlockIQ2_XXS {
  uint16_t d;  // fp16
  uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66 && alignof(BlockIQ2_XXS) == 2);

// IQ2_XS: group g (< 32, 8 values): qs[g]'s low 9 bits the grid index (kIq2XsGrid), its top 7 the sign field; the
// 16-value half h has ls = nibble h % 2 of scales[h / 2]. value = ((d * (0.5 + ls)) * 0.25) * grid * sign.
struct BlockIQ2_XS {
  uint16_t d;  // fp16
  uint16_t qs[kQK_K / 8];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74 && alignof(BlockIQ2_XS) == 2);

// IQ2_S: group g (< 32): grid index qs[g] | bits 2(g % 4) .. +1 of qh[g / 4] << 8 (kIq2SGrid), its 8 signs the bits
// of qs[32 + g] (bit j set: value j negative); ls as IQ2_XS's. value = ((d * (0.5 + ls)) * 0.25) * grid * sign.
struct BlockIQ2_S {
  uint16_t d;  // fp16
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82 && alignof(BlockIQ2_S) == 2);

static_assert(std::is_trivially_copyable_v<BlockIQ2_XXS> && std::is_trivially_copyable_v<BlockIQ2_XS> &&
              std::is_trivially_copyable_v<BlockIQ2_S>);
static_assert(std::is_trivially_copyable_v<BlockIQ3_XXS> && std::is_trivially_copyable_v<BlockIQ3_S> &&
              std::is_trivially_copyable_v<BlockIQ1_S> && std::is_trivially_copyable_v<BlockIQ1_M>);

// IQ1_M's fp16 d, gathered from its scales' top nibbles.
uint16_t iq1_m_d(const BlockIQ1_M& b);

// x: super-blocks -> y: f32 [n]; n must be a multiple of 256.
void dequantize_row_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t n);
void dequantize_row_iq3_s(const BlockIQ3_S* x, float* y, int64_t n);
void dequantize_row_iq1_s(const BlockIQ1_S* x, float* y, int64_t n);
void dequantize_row_iq1_m(const BlockIQ1_M* x, float* y, int64_t n);
void dequantize_row_iq2_xxs(const BlockIQ2_XXS* x, float* y, int64_t n);
void dequantize_row_iq2_xs(const BlockIQ2_XS* x, float* y, int64_t n);
void dequantize_row_iq2_s(const BlockIQ2_S* x, float* y, int64_t n);

// A super-block's integers: value i = (d / 2^shift) * scales[i / 16] * q[i] as a real number, which is what the
// dequantizers above compute, exactly, for a finite d (IQ3_XXS: shift 1, scales 2 * ls + 1, q = grid / 2 * sign;
// IQ3_S: shift 0, scales 2 * ls + 1, q = grid * sign; IQ1_S and IQ1_M: shift 3, scales 2 * ls + 1, q = 8 *
// coordinate + 8 * delta; IQ2_*: shift 3, scales 2 * ls + 1, q = grid * sign). Scales <= 31; |q| <= 31 but for
// IQ2's |q| <= 43.
struct DecodedIquantBlock {
  uint16_t d = 0;  // fp16, the block's own
  int shift = 0;
  int8_t scales[16] = {};
  int8_t q[kQK_K] = {};
};
void decode_iquant_block(const BlockIQ3_XXS& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ3_S& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ1_S& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ1_M& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ2_XXS& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ2_XS& b, DecodedIquantBlock& out);
void decode_iquant_block(const BlockIQ2_S& b, DecodedIquantBlock& out);

}  // namespace pagoda::quant
