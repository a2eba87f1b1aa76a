// AVX2 RMSNorm fused with the Q8_0 activation quantization: each block of 32 normalized values is quantized
// straight from registers, so the normalized f32 row is never stored. The scale and every product are the ones
// avx2::rmsnorm computes, and the block quantizer is avx2::quantize_row_q8_0's, so the bytes equal rmsnorm
// followed by quantize_row_q8_0 of the same table.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/q8_0_block.h"
#include "kernels/avx2/vec_f32x8.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/vector_ops_impl.h"

namespace pagoda::kernels::avx2 {

void rmsnorm_q8_0(const float* x, const float* weight, quant::BlockQ8_0* y, int64_t n, float eps) {
  check_quant_row_length(n);
  const float scale = detail::rms_scale<F32x8>(x, n, eps);  // as in avx2::rmsnorm
  const __m256 vs = _mm256_set1_ps(scale);
  for (int64_t b = 0; b < n / quant::BlockQ8_0::kNumValues; ++b) {
    const int64_t i = b * quant::BlockQ8_0::kNumValues;
    __m256 v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vs), _mm256_loadu_ps(weight + i + 8 * k));
    quantize_block_q8_0(v, y[b]);
  }
}

}  // namespace pagoda::kernels::avx2
