// AVX2/FMA paged attention: the shared online-softmax loop over 8-wide vector ops; K/V rows of every cache type are
// converted to f32 in registers as the dot products and weighted sums load them (kv_rows_x8.h), never into a copy.
#include "kernels/attention_heads_impl.h"
#include "kernels/attention_small_heads_impl.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/avx2/kv_rows_x8.h"
#include "kernels/avx2/vec_f32x8.h"
#include "kernels/kv_type_switch.h"
#include "kernels/paged_attention_impl.h"

namespace pagoda::kernels::avx2 {
namespace {

// Lane k of the result = the sum of the 8 lanes of a[k].
inline __m256 transpose_sum8(const __m256 (&a)[8]) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

struct Avx2Ops {
  // Eight keys at a time, one accumulator each, their sums transposed into one vector of eight scores (a
  // horizontal sum per key cost as much as its multiplies); a last partial group repeats its last row.
  template <KvDType T>
  static void scores_of(const float* q, const uint8_t* const* rows, const float* scales, int32_t m, int32_t n,
                        float* p) {
    for (int32_t j = 0; j < m; j += 8) {
      const uint8_t* r[8];
      for (int k = 0; k < 8; ++k) r[k] = rows[j + k < m ? j + k : m - 1];
      __m256 acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
      int32_t i = 0;
      for (; i + 8 <= n; i += 8) {
        const __m256 qv = _mm256_loadu_ps(q + i);
        for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(qv, kv_load8<T>(r[k], i), acc[k]);
      }
      alignas(32) float s[8];
      _mm256_store_ps(s, transpose_sum8(acc));
      for (int k = 0; k < 8 && j + k < m; ++k) {
        float sum = s[k];
        for (int32_t t = i; t < n; ++t) sum += q[t] * kv_value<T>(r[k], t);
        p[j + k] = sum * scales[j + k];
      }
    }
  }
  static void scores(KvDType type, const float* q, const uint8_t* const* rows, const float* scales, int32_t m,
                     int32_t n, float* p) {
    detail::with_kv_type(type, [&]<KvDType T>() { scores_of<T>(q, rows, scales, m, n, p); });
  }
  // The vector exp of simd_util.h, eight scores at a time (a padded copy for the last few).
  static float exp_sum(float* p, int32_t m, float max, float sum) {
    const __m256 vmax = _mm256_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    int32_t j = 0;
    for (; j + 8 <= m; j += 8) {
      const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(p + j), vmax));
      _mm256_storeu_ps(p + j, e);
      acc = _mm256_add_ps(acc, e);
    }
    float total = hsum(acc);
    if (j < m) {
      alignas(32) float tail[8];
      for (int k = 0; k < 8; ++k) tail[k] = j + k < m ? p[j + k] : max;
      _mm256_store_ps(tail, exp_ps(_mm256_sub_ps(_mm256_load_ps(tail), vmax)));
      for (int32_t k = 0; j + k < m; ++k) {
        p[j + k] = tail[k];
        total += tail[k];
      }
    }
    return sum + total;
  }
  // y += w[j] * rows[j] for each j in turn: 64 values of y at a time stay in eight registers across the rows
  // (each element still sees fma(w[j], row, y) in j order, as a sequence of axpys would give it).
  template <KvDType T>
  static void weighted_rows_of(const float* w, const uint8_t* const* rows, int32_t m, float* y, int32_t n) {
    int32_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m256 acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_loadu_ps(y + i + 8 * k);
      for (int32_t j = 0; j < m; ++j) {
        const __m256 wj = _mm256_set1_ps(w[j]);
        for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(wj, kv_load8<T>(rows[j], i + 8 * k), acc[k]);
      }
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(y + i + 8 * k, acc[k]);
    }
    for (; i + 8 <= n; i += 8) {
      __m256 acc = _mm256_loadu_ps(y + i);
      for (int32_t j = 0; j < m; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), kv_load8<T>(rows[j], i), acc);
      _mm256_storeu_ps(y + i, acc);
    }
    for (; i < n; ++i)
      for (int32_t j = 0; j < m; ++j) y[i] += w[j] * kv_value<T>(rows[j], i);
  }
  static void weighted_rows(KvDType type, const float* w, const uint8_t* const* rows, int32_t m, float* y,
                            int32_t n) {
    detail::with_kv_type(type, [&]<KvDType T>() { weighted_rows_of<T>(w, rows, m, y, n); });
  }
  static void scale(float* y, float a, int32_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= a;
  }
};

}  // namespace

// Groups of 8 or more query heads per KV head take the heads-in-lanes kernel (the scores of a K row for every head
// in one vector); smaller groups would leave lanes idle and take the keys-in-lanes one above, which was the faster
// at group 4 and the slower at group 8 (measured: see the commit that introduced it).
// Heads of at most 8 values in groups under 8 take the small-heads kernel (positions in lanes;
// attention_small_heads_impl.h).
// Only the keys-in-lanes loop walks an item's several KV heads together; the others take them one at a time.
void paged_attention(const AttentionArgs& args) {
  if (args.num_q_heads <= detail::kSmallHeadMaxGroup && args.head_dim <= detail::kSmallHeadMaxDim)
    for_each_kv_head<Avx2Ops>(args, [](const AttentionArgs& one) { detail::attention_small_heads<F32x8>(one); });
  else if (args.num_q_heads < F32x8::kWidth || args.head_dim > detail::kHeadsMaxHeadDim)
    detail::paged_attention<Avx2Ops>(args);
  else
    for_each_kv_head<Avx2Ops>(args, [](const AttentionArgs& one) { detail::attention_heads_all<F32x8>(one); });
}

}  // namespace pagoda::kernels::avx2
