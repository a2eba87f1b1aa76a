// The AVX2 K-quant and 4-bit codebook matmuls (Q2_Kx8 ... Q7_Kx8 and IQ4_XSx8 against q8_K activations; IQ4_NLx8,
// MXFP4x8, Q4_1x8, Q5_1x8 against Q8_0 ones): kernels/kquant_x8_impl.h, codebook_x8_impl.h and
// legacy_x8_impl.h with maddubs
// + madd as the u8 x s8 dot product (exact: a weight of at most 127 times two activations of at most 128 stays inside
// int16) and four tokens per pass (16 ymm registers).
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/codebook_x8_impl.h"
#include "kernels/kquant_x8_impl.h"
#include "kernels/legacy_x8_impl.h"

namespace pagoda::kernels::avx2 {
namespace {

struct MaddubsDot {
  static __m256i dot(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
};
using V = V256<MaddubsDot>;
constexpr int kTokenGroup = 4;

}  // namespace

PAGODA_KQUANT_X8_ENTRY_POINTS(V, V, kTokenGroup, quant::quantize_row_q8_K)
PAGODA_CODEBOOK_X8_ENTRY_POINTS(V, V, kTokenGroup, quantize_row_q8_0, quant::quantize_row_q8_K)
PAGODA_LEGACY_X8_ENTRY_POINTS(V, V, kTokenGroup, quantize_row_q8_0)

}  // namespace pagoda::kernels::avx2
