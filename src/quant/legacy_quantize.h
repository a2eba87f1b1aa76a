// Quantizers for ggml's 32-value blocks Q4_1, Q5_0 and Q5_1 (layouts in block_legacy_quants.h), and Q4_0 under
// importance weights, byte-identical to ggml's quantize_q4_1 / q5_0 / q5_1 / q4_0: the reference rows without weights,
// the weighted search with them. Q5_0/Q5_1 are llama.cpp's fallbacks for K-quant rows that are not whole
// super-blocks; Q4_1 its early ffn_down layers of Q4_0 under an importance matrix.
// Must not touch the dequantizers or block_q4_0.h's reference quantizer, which stays the unweighted Q4_0.
#pragma once

#include <cstdint>

#include "quant/block_legacy_quants.h"
#include "quant/block_q4_0.h"

namespace pagoda::quant {

// x: f32 [num_rows, row_len] -> y: num_rows * row_len / 32 blocks; row_len must be a multiple of 32.
// importance: nullptr, or row_len weights per input column shared by every row.
void quantize_rows_q4_1(const float* x, BlockQ4_1* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q5_0(const float* x, BlockQ5_0* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q5_1(const float* x, BlockQ5_1* y, int64_t num_rows, int64_t row_len, const float* importance);
void quantize_rows_q4_0(const float* x, BlockQ4_0* y, int64_t num_rows, int64_t row_len, const float* importance);

}  // namespace pagoda::quant
