// AVX2/FMA paged attention: the shared online-softmax loop over 8-wide vector ops; int8 K/V rows are widened
// to f32 in registers (dequantized inside the kernel, never into a copy).
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/paged_attention_impl.h"

namespace pagoda::kernels::avx2 {
namespace {

struct Avx2Ops {
  // Inlined (a head's row is 64 or 128 values: a call per K row cost as much as its arithmetic).
  static float dot(const float* q, const float* k, int32_t n) { return dot_with(q, k, n, load_f32x8); }
  static float dot_i8(const float* q, const int8_t* k, int32_t n) { return dot_with(q, k, n, load_i8x8); }
  // y += w[j] * rows[j] for each j in turn: 64 values of y at a time stay in eight registers across the rows
  // (each element still sees fma(w[j], row, y) in j order, as a sequence of axpys would give it).
  template <class Row, class Load>
  static void weighted_rows_with(const float* w, const Row* const* rows, int32_t m, float* y, int32_t n, Load load) {
    int32_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m256 acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_loadu_ps(y + i + 8 * k);
      for (int32_t j = 0; j < m; ++j) {
        const __m256 wj = _mm256_set1_ps(w[j]);
        for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(wj, load(rows[j] + i + 8 * k), acc[k]);
      }
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(y + i + 8 * k, acc[k]);
    }
    for (; i + 8 <= n; i += 8) {
      __m256 acc = _mm256_loadu_ps(y + i);
      for (int32_t j = 0; j < m; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), load(rows[j] + i), acc);
      _mm256_storeu_ps(y + i, acc);
    }
    for (; i < n; ++i)
      for (int32_t j = 0; j < m; ++j) y[i] += w[j] * float(rows[j][i]);
  }
  static void weighted_rows(const float* w, const float* const* rows, int32_t m, float* y, int32_t n) {
    weighted_rows_with(w, rows, m, y, n, load_f32x8);
  }
  static void weighted_rows_i8(const float* w, const int8_t* const* rows, int32_t m, float* y, int32_t n) {
    weighted_rows_with(w, rows, m, y, n, load_i8x8);
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
