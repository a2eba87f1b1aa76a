// AVX-512 vector ops: rmsnorm, dot, axpy, silu_mul, gelu_mul, swiglu_oai_mul, softmax (vector_ops_impl.h over 16
// lanes), and the activation quantizers (Q8_0 blocks, RMSNorm fused with them, q8_K super-blocks, per-token INT8) in
// the same exact arithmetic as the scalar references: the same bytes as quant::quantize_row_q8_0 / quantize_row_q8_K
// / quantize_int8_values for any input without nan.
#include <immintrin.h>

#include <cstring>

#include "core/check.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/vec_f32x16.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/vector_ops_impl.h"

namespace pagoda::kernels::avx512 {
namespace {

// One Q8_0 block from its 32 values in two registers.
inline void quantize_block_q8_0(__m512 v0, __m512 v1, quant::BlockQ8_0& out) {
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));  // exact
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  // F16C rounds to nearest even, overflows to inf and keeps subnormals, exactly as float_to_fp16 does.
  out.d = uint16_t(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
  const __m512 vid = _mm512_set1_ps(id);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs),
                   _mm512_cvtsepi32_epi8(round_half_away_q8(_mm512_mul_ps(v0, vid))));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs + 16),
                   _mm512_cvtsepi32_epi8(round_half_away_q8(_mm512_mul_ps(v1, vid))));
}

}  // namespace

float dot(const float* a, const float* b, int64_t n) { return detail::dot<F32x16>(a, b, n); }
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  detail::rmsnorm<F32x16>(x, weight, y, n, eps);
}
void axpy(float a, const float* x, float* y, int64_t n) { detail::axpy<F32x16>(a, x, y, n); }
void silu_mul(float* gate, const float* up, int64_t n) { detail::silu_mul<F32x16>(gate, up, n); }
void gelu_mul(float* gate, const float* up, int64_t n) { detail::gelu_mul<F32x16>(gate, up, n); }
void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  detail::swiglu_oai_mul<F32x16>(gate, up, n, alpha, limit);
}
void softmax(const float* x, float* y, int64_t n) { detail::softmax<F32x16>(x, y, n); }

void quantize_row_q8_0(const float* x, quant::BlockQ8_0* y, int64_t n) {
  check_quant_row_length(n);
  for (int64_t b = 0; b < n / quant::BlockQ8_0::kNumValues; ++b)
    quantize_block_q8_0(_mm512_loadu_ps(x + 32 * b), _mm512_loadu_ps(x + 32 * b + 16), y[b]);
}

// quant::quantize_row_q8_K's bytes: its float-add rounding is round-to-nearest-even of the same product, which the
// conversion under the default rounding gives; the first value of the largest magnitude is found by its mask.
void quantize_row_q8_K(const float* x, quant::BlockQ8_K* y, int64_t n) {
  PAGODA_CHECK(n % quant::kQK_K == 0, "q8_K rows need whole 256-value blocks, got n = {}", n);
  constexpr int kVectors = quant::kQK_K / 16;
  for (int64_t b = 0; b < n / quant::kQK_K; ++b, x += quant::kQK_K) {
    quant::BlockQ8_K& out = y[b];
    __m512 vmax = _mm512_setzero_ps();
    for (int k = 0; k < kVectors; ++k) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)));
    const float amax = _mm512_reduce_max_ps(vmax);
    if (amax == 0.0f) {
      out.d = 0.0f;
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    float max = 0.0f;
    for (int k = 0; k < kVectors; ++k) {
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)), _mm512_set1_ps(amax),
                                              _CMP_EQ_OQ);
      if (at != 0) {
        max = x[16 * k + __builtin_ctz(at)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vscale = _mm512_set1_ps(iscale);
    for (int k = 0; k < kVectors; ++k) {
      const __m512i q = _mm512_min_epi32(
          _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * k), vscale),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
          _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs + 16 * k), _mm512_cvtepi32_epi8(q));
      out.bsums[k] = int16_t(_mm512_reduce_add_epi32(q));
    }
    out.d = 1.0f / iscale;
  }
}

// The scale and products of avx512::rmsnorm, each block quantized from registers (the f32 row is never stored).
void rmsnorm_q8_0(const float* x, const float* weight, quant::BlockQ8_0* y, int64_t n, float eps) {
  check_quant_row_length(n);
  const __m512 vs = _mm512_set1_ps(detail::rms_scale<F32x16>(x, n, eps));
  for (int64_t b = 0; b < n / quant::BlockQ8_0::kNumValues; ++b) {
    const int64_t i = 32 * b;
    const __m512 v0 = _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), _mm512_loadu_ps(weight + i));
    const __m512 v1 = _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), vs), _mm512_loadu_ps(weight + i + 16));
    quantize_block_q8_0(v0, v1, y[b]);
  }
}

// Any row length: masked loads and stores for the last 1..15 values (a zero changes neither the max nor the others).
float quantize_row_int8(const float* x, int8_t* q, int64_t n) {
  __m512 vmax = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  const __mmask16 tail = __mmask16((1u << (n - i)) - 1);
  if (i < n) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + i)));
  const float amax = _mm512_reduce_max_ps(vmax);  // exact: max does not round
  const float d = amax / 127.0f;
  const __m512 vid = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  for (i = 0; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i),
                     _mm512_cvtsepi32_epi8(round_half_away_q8(_mm512_mul_ps(_mm512_loadu_ps(x + i), vid))));
  if (i < n)
    _mm512_mask_cvtsepi32_storeu_epi8(q + i, tail,
                                      round_half_away_q8(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + i), vid)));
  return d;
}

}  // namespace pagoda::kernels::avx512
