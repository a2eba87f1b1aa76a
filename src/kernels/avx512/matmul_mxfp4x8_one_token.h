// The avx512 level's MXFP4x8 table entries (matmul_mxfp4x8_one_token.cc): one token by a forward-streaming product
// of its own, more by avx512_kernels.h's matmul_mxfp4x8 and _q8_0; the same bits either way. Only files in avx512/ and
// the kernel registry include it.
#pragma once

#include "kernels/kernels.h"

namespace pagoda::kernels::avx512 {
void matmul_mxfp4x8_decode(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,
                           int64_t num_tokens);
void matmul_mxfp4x8_decode_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                                int64_t num_tokens, int64_t y_stride);
}  // namespace pagoda::kernels::avx512
