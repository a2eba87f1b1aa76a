// q8_K activations: ggml's quantize_row_q8_K_ref for the activations every K-quant matmul reads (BlockQ8_K, the
// block itself and its dequantizer, is block_kquants.h's, as GGUF stores it). The rounding here is the one every
// K-quant kernel must see bit for bit; it must not know any weight layout.
#pragma once

#include <cstdint>

#include "quant/block_kquants.h"

namespace pagoda::quant {

// x: f32 [n] -> y: [n / 256] blocks; n must be a multiple of 256. Same bytes as ggml's quantize_row_q8_K_ref for
// finite input: with m the value of largest magnitude (the first of equals), iscale = -127 / m, q = min(127,
// nearest_int(iscale * x)) (ties to even), d = 1 / iscale, bsums[k] the sum of q[16k .. 16k + 15]; an all-zero
// block gets d = 0, q = 0 and bsums 0. The quantizer never writes -128. Non-finite inputs give unspecified (but
// defined) values.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace pagoda::quant
