// AVX2/FMA paged attention: the shared online-softmax loop over 8-wide vector ops; int8 K/V rows are widened
// to f32 in registers (dequantized inside the kernel, never into a copy).
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/paged_attention_impl.h"

namespace pagoda::kernels::avx2 {
namespace {

inline __m256 load_i8x8(const int8_t* x) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
}

struct Avx2Ops {
  static float dot(const float* q, const float* k, int32_t n) { return avx2::dot(q, k, n); }
  static float dot_i8(const float* q, const int8_t* k, int32_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_i8x8(k + i), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load_i8x8(k + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_i8x8(k + i), acc0);
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) s += q[i] * float(k[i]);
    return s;
  }
  static void axpy(float a, const float* x, float* y, int32_t n) { avx2::axpy(a, x, y, n); }
  static void axpy_i8(float a, const int8_t* x, float* y, int32_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_i8x8(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += a * float(x[i]);
  }
  static void scale(float* y, float a, int32_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= a;
  }
};

}  // namespace

void paged_attention(const AttentionArgs& args) { detail::paged_attention<Avx2Ops>(args); }

}  // namespace pagoda::kernels::avx2
