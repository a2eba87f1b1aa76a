// AVX-512 paged attention: the shared online-softmax loop (paged_attention_impl.h) over 16-lane ops, and the
// heads-in-lanes kernel (attention_heads_impl.h) at 16 lanes, or 8 (F32x8Vl) for a group of exactly 8 query heads,
// which would leave half of a zmm idle. K/V rows of every cache type are converted to f32 in registers as they are
// loaded (kv_rows_x16.h); a row's tail goes through masked loads (no scalar loop).
#include <immintrin.h>

#include "kernels/attention_heads_impl.h"
#include "kernels/avx512/attention_small_head_pairs.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/vec_f32x16.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/kv_type_switch.h"
#include "kernels/paged_attention_impl.h"

namespace pagoda::kernels::avx512 {
namespace {

inline __mmask16 first_lanes(int32_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

struct Avx512Ops {
  // Sixteen keys at a time, one accumulator each (16 of the 32 registers), their sums transposed into one vector of
  // sixteen scores; the row's last 1..15 values through masked loads; a last partial group repeats its last row.
  template <KvDType T>
  static void scores_of(const float* q, const uint8_t* const* rows, const float* scales, int32_t m, int32_t n,
                        float* p) {
    for (int32_t j = 0; j < m; j += 16) {
      const uint8_t* r[16];
      for (int k = 0; k < 16; ++k) r[k] = rows[j + k < m ? j + k : m - 1];
      __m512 acc[16];
      for (int k = 0; k < 16; ++k) acc[k] = _mm512_setzero_ps();
      for (int32_t i = 0; i < n; i += 16) {
        const __mmask16 mask = first_lanes(n - i);
        const __m512 qv = _mm512_maskz_loadu_ps(mask, q + i);
        for (int k = 0; k < 16; ++k) acc[k] = _mm512_fmadd_ps(qv, kv_load16<T>(r[k], i, mask), acc[k]);
      }
      const __mmask16 keys = first_lanes(m - j);
      _mm512_mask_storeu_ps(p + j, keys, _mm512_mul_ps(transpose_sum16(acc), _mm512_maskz_loadu_ps(keys, scales + j)));
    }
  }
  static void scores(KvDType type, const float* q, const uint8_t* const* rows, const float* scales, int32_t m,
                     int32_t n, float* p) {
    detail::with_kv_type(type, [&]<KvDType T>() { scores_of<T>(q, rows, scales, m, n, p); });
  }
  static float exp_sum(float* p, int32_t m, float max, float sum) {
    const __m512 vmax = _mm512_set1_ps(max);
    __m512 acc = _mm512_setzero_ps();
    for (int32_t j = 0; j < m; j += 16) {
      const __mmask16 mask = first_lanes(m - j);
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, p + j), vmax));
      _mm512_mask_storeu_ps(p + j, mask, e);
      acc = _mm512_mask_add_ps(acc, mask, acc, e);
    }
    return sum + _mm512_reduce_add_ps(acc);
  }
  // y += w[j] * rows[j] for each j in turn, up to 128 values of y in registers across the rows (each element sees
  // fma(w[j], row, y) in j order, as a sequence of axpys would give it): values i.. of R registers, the last masked.
  template <int R, KvDType T>
  static void weighted_block(const float* w, const uint8_t* const* rows, int32_t m, float* y, int32_t i, int32_t n) {
    __mmask16 mask[R];
    __m512 acc[R];
    for (int k = 0; k < R; ++k) {
      mask[k] = first_lanes(n - i - 16 * k);
      acc[k] = _mm512_maskz_loadu_ps(mask[k], y + i + 16 * k);
    }
    for (int32_t j = 0; j < m; ++j) {
      const __m512 wj = _mm512_set1_ps(w[j]);
      for (int k = 0; k < R; ++k) acc[k] = _mm512_fmadd_ps(wj, kv_load16<T>(rows[j], i + 16 * k, mask[k]), acc[k]);
    }
    for (int k = 0; k < R; ++k) _mm512_mask_storeu_ps(y + i + 16 * k, mask[k], acc[k]);
  }
  // weighted_block over 128 values with no tail, its sums in eight named registers: every lane loaded, so no mask is
  // kept (eight do not fit beside the loop's other mask registers), and no array of sums that the compiler stores back
  // to the stack after every row.
  template <KvDType T>
  static void weighted_block_full(const float* w, const uint8_t* const* rows, int32_t m, float* y, int32_t i) {
    constexpr __mmask16 kAll = 0xffff;
    __m512 a0 = _mm512_loadu_ps(y + i), a1 = _mm512_loadu_ps(y + i + 16), a2 = _mm512_loadu_ps(y + i + 32),
           a3 = _mm512_loadu_ps(y + i + 48), a4 = _mm512_loadu_ps(y + i + 64), a5 = _mm512_loadu_ps(y + i + 80),
           a6 = _mm512_loadu_ps(y + i + 96), a7 = _mm512_loadu_ps(y + i + 112);
    for (int32_t j = 0; j < m; ++j) {
      const __m512 wj = _mm512_set1_ps(w[j]);
      const uint8_t* r = rows[j];
      a0 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i, kAll), a0);
      a1 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 16, kAll), a1);
      a2 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 32, kAll), a2);
      a3 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 48, kAll), a3);
      a4 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 64, kAll), a4);
      a5 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 80, kAll), a5);
      a6 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 96, kAll), a6);
      a7 = _mm512_fmadd_ps(wj, kv_load16<T>(r, i + 112, kAll), a7);
    }
    _mm512_storeu_ps(y + i, a0);
    _mm512_storeu_ps(y + i + 16, a1);
    _mm512_storeu_ps(y + i + 32, a2);
    _mm512_storeu_ps(y + i + 48, a3);
    _mm512_storeu_ps(y + i + 64, a4);
    _mm512_storeu_ps(y + i + 80, a5);
    _mm512_storeu_ps(y + i + 96, a6);
    _mm512_storeu_ps(y + i + 112, a7);
  }
  template <KvDType T>
  static void weighted_rows_of(const float* w, const uint8_t* const* rows, int32_t m, float* y, int32_t n) {
    for (int32_t i = 0; i < n; i += 128) {
      if (n - i >= 128) {
        weighted_block_full<T>(w, rows, m, y, i);
        continue;
      }
      switch ((n - i + 15) / 16) {
        case 1: weighted_block<1, T>(w, rows, m, y, i, n); break;
        case 2: weighted_block<2, T>(w, rows, m, y, i, n); break;
        case 3: weighted_block<3, T>(w, rows, m, y, i, n); break;
        case 4: weighted_block<4, T>(w, rows, m, y, i, n); break;
        case 5: weighted_block<5, T>(w, rows, m, y, i, n); break;
        case 6: weighted_block<6, T>(w, rows, m, y, i, n); break;
        case 7: weighted_block<7, T>(w, rows, m, y, i, n); break;
        default: weighted_block<8, T>(w, rows, m, y, i, n); break;
      }
    }
  }
  static void weighted_rows(KvDType type, const float* w, const uint8_t* const* rows, int32_t m, float* y,
                            int32_t n) {
    detail::with_kv_type(type, [&]<KvDType T>() { weighted_rows_of<T>(w, rows, m, y, n); });
  }
  static void scale(float* y, float a, int32_t n) {
    const __m512 va = _mm512_set1_ps(a);
    for (int32_t i = 0; i < n; i += 16) {
      const __mmask16 mask = first_lanes(n - i);
      _mm512_mask_storeu_ps(y + i, mask, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mask, y + i)));
    }
  }
};

}  // namespace

// As avx2::paged_attention: groups too small to fill 8 lanes with heads take the keys-in-lanes loop (16 keys per
// vector); a group of exactly 8 heads fills a ymm (F32x8Vl), larger ones a zmm (F32x16: 9..15 heads in one pass rather
// than two of 8). Each choice was at least as fast as the avx2 level's at groups 4, 8 and 16, and F32x16 with half
// its lanes idle was slower than F32x8Vl at group 8 (measured: see the commit that introduced it).
// Heads of at most 8 values in groups under 8 take the small-heads kernel (positions in lanes, query heads in pairs;
// attention_small_head_pairs.h).
// Only the keys-in-lanes loop walks an item's several KV heads together; the others take them one at a time.
void paged_attention(const AttentionArgs& args) {
  if (args.num_q_heads <= detail::kSmallHeadMaxGroup && args.head_dim <= detail::kSmallHeadMaxDim)
    for_each_kv_head<Avx512Ops>(args, [](const AttentionArgs& one) { attention_small_head_pairs(one); });
  else if (args.num_q_heads < F32x8Vl::kWidth || args.head_dim > detail::kHeadsMaxHeadDim)
    detail::paged_attention<Avx512Ops>(args);
  else if (args.num_q_heads == F32x8Vl::kWidth)
    for_each_kv_head<Avx512Ops>(args, [](const AttentionArgs& one) { detail::attention_heads_all<F32x8Vl>(one); });
  else
    for_each_kv_head<Avx512Ops>(args, [](const AttentionArgs& one) { detail::attention_heads_all<F32x16>(one); });
}

}  // namespace pagoda::kernels::avx512
