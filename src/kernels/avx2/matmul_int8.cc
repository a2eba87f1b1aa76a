// AVX2 W8A8 matmul: INT8 per-channel weight rows against per-token INT8 activations. Per 32 values |w|
// (unsigned) times x carrying w's sign via maddubs, pairs summed to int32 via madd, accumulated in int32 lanes;
// a row tail of under 32 values is summed in scalar code. The integer sum is exact (quant::kMaxInt8RowLength
// bounds it), and it is scaled exactly as the reference does, so the result equals the scalar kernel's bit for bit.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/row_int8.h"

namespace pagoda::kernels::avx2 {
namespace {

// y[k * y_stride] = row . token k for k < kTokens; x points at the first token's values (row stride num_in).
// maddubs cannot saturate: |w| <= 128 and |x| <= 127 (our quantizer never writes -128), so a pair is at most
// 2 * 128 * 127 = 32512 < 32767.
template <int kTokens>
inline void row_times_tokens(const uint8_t* row, const int8_t* x, const float* x_scales, int64_t num_in, float* y,
                             int64_t y_stride) {
  const int8_t* w = quant::int8_row_values(row);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kTokens];
  for (int k = 0; k < kTokens; ++k) acc[k] = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 32 <= num_in; i += 32) {
    if (i % 64 == 0) prefetch_weights_ahead(w + i);
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i));
    const __m256i abs_w = _mm256_sign_epi8(qw, qw);
    for (int k = 0; k < kTokens; ++k) {
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k * num_in + i));
      const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(qx, qw)), ones);
      acc[k] = _mm256_add_epi32(acc[k], pairs);
    }
  }
  const float w_scale = quant::int8_row_scale(row);
  for (int k = 0; k < kTokens; ++k) {
    int32_t sumi = hsum_epi32(acc[k]);
    for (int64_t j = i; j < num_in; ++j) sumi += int32_t(w[j]) * int32_t(x[k * num_in + j]);
    y[k * y_stride] = float(sumi) * (w_scale * x_scales[k]);
  }
}

}  // namespace

void matmul_int8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride) {
  check_int8_row_length(num_in);
  const auto* rows = static_cast<const uint8_t*>(w);
  const int64_t row_bytes = quant::int8_row_bytes(num_in);
  for_each_row_and_token_group(row_bytes, num_out, num_tokens, [&]<int kTokens>(int64_t o, int64_t t) {
    row_times_tokens<kTokens>(rows + o * row_bytes, xq + t * num_in, x_scales + t, num_in, y + t * y_stride + o,
                              y_stride);
  });
}

void matmul_int8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx2::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx2
