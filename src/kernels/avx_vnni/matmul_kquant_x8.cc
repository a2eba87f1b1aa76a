// The vpdpbusd K-quant and 4-bit codebook matmuls (Q2_Kx8 ... Q7_Kx8 and IQ4_XSx8 against q8_K activations;
// IQ4_NLx8, MXFP4x8, Q4_1x8, Q5_1x8 against Q8_0 ones): kernels/kquant_x8_impl.h, codebook_x8_impl.h and
// legacy_x8_impl.h with
// this compilation's vpdpbusd and token group (vnni_util.h: 4 tokens per pass with the VEX encoding's 16 registers,
// 8 with the EVEX one's 32).
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/codebook_x8_impl.h"
#include "kernels/kquant_x8_impl.h"
#include "kernels/legacy_x8_impl.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

struct VnniDot {
  static __m256i dot(__m256i acc, __m256i u8, __m256i s8) { return dpbusd(acc, u8, s8); }
};
using V = V256<VnniDot>;

}  // namespace

PAGODA_KQUANT_X8_ENTRY_POINTS(V, V, kTokenGroup, quant::quantize_row_q8_K)
PAGODA_CODEBOOK_X8_ENTRY_POINTS(V, V, kTokenGroup, avx2::quantize_row_q8_0, quant::quantize_row_q8_K)
PAGODA_LEGACY_X8_ENTRY_POINTS(V, V, kTokenGroup, avx2::quantize_row_q8_0)

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
