// Lossless re-encodings of ggml block types that have no kernel of their own into K-quant super-blocks whose kernels
// pagoda has (the carrier): each value the carrier's dequantizer gives is the source dequantizer's, bit for bit, so
// the model computes with exactly the file's weights. TQ1_0 and TQ2_0 ride in Q2_K: value = d * (t - 1) is
// Q2_K's d * scale * q - dmin * min with scale = min = 1, dmin = d, q = t. IQ3_XXS, IQ3_S, IQ1_S and IQ1_M ride in
// Q6_K: their decoded integers (quant/block_iquants.h: (d / 2^shift) * scale * q, |q| and scale <= 31) are Q6_K's
// d * scale * (q6 - 32) with Q6_K's d = d / 2^shift, which must be exact in fp16 (it is for any |d| >= 2^-11; a
// smaller one whose low bits would be lost is declined). IQ2_XXS, IQ2_XS and IQ2_S, whose |q| reach 43, ride in
// pagoda's Q7_K (quant/block_q7_k.h) the same way, q7 = q + 64 and d = d / 8. Q5_0, a 32-value block like Q8_0's,
// rides in Q8_0: its value (q - 16) * d is Q8_0's qs * d with qs = q - 16 and the same fp16 d, for any d. Must not
// touch the kernels.
#pragma once

#include <cstdint>

#include "quant/block_iquants.h"
#include "quant/block_kquants.h"
#include "quant/block_legacy_quants.h"
#include "quant/block_q8_0.h"
#include "quant/block_q7_k.h"
#include "quant/block_ternary.h"

namespace pagoda::quant {

// x: the super-blocks of a row of n values -> y: as many Q2_K super-blocks. False, with y unspecified, when a block's
// scale is not finite (inf - inf would read as NaN where the source gives +-inf): the caller converts such a row
// some other way.
bool carry_row_as_q2_K(const BlockTQ1_0* x, BlockQ2_K* y, int64_t n);
bool carry_row_as_q2_K(const BlockTQ2_0* x, BlockQ2_K* y, int64_t n);
// The same into Q6_K; false also when a block's d / 2^shift is not exact in fp16.
bool carry_row_as_q6_K(const BlockIQ3_XXS* x, BlockQ6_K* y, int64_t n);
bool carry_row_as_q6_K(const BlockIQ3_S* x, BlockQ6_K* y, int64_t n);
bool carry_row_as_q6_K(const BlockIQ1_S* x, BlockQ6_K* y, int64_t n);
bool carry_row_as_q6_K(const BlockIQ1_M* x, BlockQ6_K* y, int64_t n);
// The same into Q7_K.
bool carry_row_as_q7_K(const BlockIQ2_XXS* x, BlockQ7_K* y, int64_t n);
bool carry_row_as_q7_K(const BlockIQ2_XS* x, BlockQ7_K* y, int64_t n);
bool carry_row_as_q7_K(const BlockIQ2_S* x, BlockQ7_K* y, int64_t n);
// The same into Q8_0 (n a multiple of 32); always exact, so always true.
bool carry_row_as_q8_0(const BlockQ5_0* x, BlockQ8_0* y, int64_t n);

}  // namespace pagoda::quant
