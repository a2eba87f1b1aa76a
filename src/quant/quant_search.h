// The scale searches ggml's quantizers share (make_qx_quants, make_qkx2_quants, make_qkx3_quants, make_qp_quants and
// nearest_int), written to give ggml's exact floats: the same operations in the same order, each product and sum
// rounded on its own (this library builds with -ffp-contract=off). Used by the K-quant and legacy-block quantizers
// (kquant_quantize.h, legacy_quantize.h); owns no block layout.
#pragma once

#include <cstdint>

namespace pagoda::quant {

// Round to nearest, ties to even, for |x| < 2^22 (ggml's float-add trick, so ties round as ggml's do).
int nearest_int(float x);

// Symmetric search: L[i] = q + nmax with q in [-nmax, nmax - 1]; returns the scale (its sign is the largest
// magnitude value's). rmse_type 1 weighs each value by `weights` or, without them, by x^2.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* weights);

// Symmetric search for Q3_K's reference rows: L[i] = q + nmax with q in [-nmax, nmax - 1], then (with do_rmse) up
// to five passes that move single values to where the x^2-weighted fit improves; returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Affine search over scale and min with weights (rmin + k * rdelta steps, nstep of them): L[i] in [0, nmax],
// *neg_min = -min. make_qkx3_quants takes weights == nullptr as x^2.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);

// Non-negative values to [0, nmax] with weights (the K-quants' sub-block scales under an importance matrix).
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* weights);

}  // namespace pagoda::quant
