// AVX2 quantization of an f32 row to Q8_0 blocks, the activation side of the quantized matmuls. It writes the
// same bytes as quant::quantize_row_q8_0 for any input without nan (same f32 scale, same product x * (1/d),
// roundf's half-away-from-zero rounding done exactly), so the scalar and AVX2 matmuls see identical integers and
// differ only in the order of their float sums. ggml's own AVX2 quantizer rounds half to even; ours does not, on
// purpose.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/q8_0_block.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx2 {

void quantize_row_q8_0(const float* x, quant::BlockQ8_0* y, int64_t n) {
  check_quant_row_length(n);
  for (int64_t b = 0; b < n / quant::BlockQ8_0::kNumValues; ++b) {
    const float* xb = x + b * quant::BlockQ8_0::kNumValues;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
    quantize_block_q8_0(v, y[b]);
  }
}

}  // namespace pagoda::kernels::avx2
