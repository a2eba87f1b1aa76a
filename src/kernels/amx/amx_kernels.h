// AMX kernels (AMX-TILE + AMX-INT8 on top of the avx512 level): the amx level's additions over avx512. Only files in
// amx/ are compiled with -mamx-*; call them only through a KernelTable chosen after the cpuid, XCR0 and
// arch_prctl(ARCH_REQ_XCOMP_PERM) checks of dispatch.cc.
#pragma once

#include "kernels/kernels.h"

namespace pagoda::kernels::amx {
// INT8x16 weights (quant/row_int8x8.h) against per-token INT8 activations by tdpbssd, for prefill-sized calls (16
// tokens and more; fewer go to the avx512 kernel): the plain INT8 kernel's bits, as every level's.
void matmul_int8x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_int8x16_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                         int64_t num_in, int64_t num_tokens, int64_t y_stride);
}  // namespace pagoda::kernels::amx
