// AVX2 W8A8 matmul for INT8x8 weights (quant/row_int8x8.h): one 32-byte load holds four values of each of eight
// rows, |w| (unsigned) times the four activations broadcast, carrying w's sign (maddubs), then madd leave each row
// its own int32 lane, summed over the whole row with no horizontal sum; the eight rows are scaled at the end with
// one vector multiply, as float(sum) * (w_scale * x_scale): the bits of matmul_int8_int8. A pair is at most
// 2 x 128 x 127 = 32512 (no saturation) and quant::kMaxInt8RowLength keeps the int32 sums exact. Tokens go in
// fours per weight load, over row tiles that stay in L2.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::avx2 {
namespace {

// y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens; x: int8 [kTokens, num_in].
template <int kTokens>
inline void group_times_tokens(const void* group, const int8_t* x, const float* x_scales, int64_t num_in, float* y,
                               int64_t y_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* q = quant::int8x8_values(group);
  __m256i acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_si256();
  for (int64_t word = 0; word < num_in / 4; ++word) {
    if (word % 2 == 0) prefetch_weights_ahead(q + 32 * word);
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * word));
    const __m256i abs_w = _mm256_sign_epi8(w, w);
    for (int t = 0; t < kTokens; ++t) {
      const __m256i xb = broadcast4(x + t * num_in + 4 * word);
      acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(xb, w)), ones));
    }
  }
  const __m256 w_scales = _mm256_loadu_ps(quant::int8x8_scales(group));
  for (int t = 0; t < kTokens; ++t)
    _mm256_storeu_ps(y + t * y_stride,
                     _mm256_mul_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_mul_ps(w_scales, _mm256_set1_ps(x_scales[t]))));
}

}  // namespace

void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in);
  const int64_t group_bytes = quant::int8x8_group_bytes(num_in);
  const auto* groups = static_cast<const uint8_t*>(w);
  for_each_row_and_token_group(group_bytes, num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
    group_times_tokens<kTokens>(groups + g * group_bytes, xq + t * num_in, x_scales + t, num_in,
                                y + t * y_stride + 8 * g, y_stride);
  });
}

void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx2::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8x8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx2
