// AVX2/FMA vector ops: rmsnorm, dot, axpy, silu_mul (with the vector exp of simd_util.h).
#include <cmath>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"

namespace pagoda::kernels::avx2 {

float dot(const float* a, const float* b, int64_t n) { return dot_with(a, b, n, load_f32x8); }

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const float sum_sq = dot(x, x, n);
  const float scale = 1.0f / std::sqrt(sum_sq / float(n) + eps);
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(weight + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void axpy(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

namespace {

inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = exp_ps(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));  // exp(-g)
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  // The tail goes through the same vector exp (padded), not std::exp: then an element's bits do not depend on
  // whether it falls in the tail, and a slice gives what the whole row gives.
  if (i < n) {
    alignas(32) float g[8] = {}, u[8] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    _mm256_store_ps(g, silu_mul8(_mm256_load_ps(g), _mm256_load_ps(u)));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

}  // namespace pagoda::kernels::avx2
