// Quantizers for ggml's IQ4_NL and IQ4_XS blocks (layouts in block_iq4_mxfp4.h), byte-identical to ggml's
// quantize_iq4_nl / quantize_iq4_xs, with or without importance weights: per 32-value block a scale search over
// the codebook's levels, then (IQ4_XS) the eight block scales quantized to 6 bits against the super-block's fp16 d
// and every value re-chosen against its stored scale. Scalar only; must not touch the dequantizers or the
// interleaved copies.
#pragma once

#include <cstdint>

#include "quant/block_iq4_mxfp4.h"
#include "quant/block_kquants.h"

namespace pagoda::quant {

// x: f32 [num_rows, row_len] -> y: num_rows * row_len / 32 (IQ4_NL) or / 256 (IQ4_XS) blocks; row_len a multiple of
// the block. importance: nullptr, or row_len weights per input column that every row shares.
void quantize_rows_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t num_rows, int64_t row_len, const float* importance);

}  // namespace pagoda::quant
