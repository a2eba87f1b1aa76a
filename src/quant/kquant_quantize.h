// Quantizers for ggml's K-quant super-blocks Q2_K ... Q6_K (layouts in block_kquants.h), byte-identical to
// ggml's quantize_q2_K ... q6_K: without importance weights its reference rows (quantize_row_*_K_ref), with
// them its weighted search (quantize_row_*_K_impl). Scalar only; must not touch the dequantizers or the
// interleaved copies.
#pragma once

#include <cstdint>

#include "quant/block_kquants.h"

namespace pagoda::quant {

// x: f32 [num_rows, row_len] -> y: num_rows * row_len / 256 blocks; row_len must be a multiple of 256.
// importance: nullptr, or row_len weights per input column (llama.cpp's imatrix: the mean squared activation) that
// every row shares.
void quantize_rows_q2_K(const float* x, BlockQ2_K* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q3_K(const float* x, BlockQ3_K* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q4_K(const float* x, BlockQ4_K* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q5_K(const float* x, BlockQ5_K* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q6_K(const float* x, BlockQ6_K* y, int64_t num_rows, int64_t row_len, const float* importance);

}  // namespace pagoda::quant
