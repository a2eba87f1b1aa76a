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

// The lines of [p, p + bytes) towards L2.
inline void prefetch_lines(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T1);
}

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
  // paged_attention_impl.h's address-order walk. Scores: per position, query heads sixteen at a time, each head's
  // share of the row read front to back into its own accumulator (summed over the values as scores_of sums a key),
  // four heads interleaved; their sums transposed into one vector of sixteen scores (a last partial group repeats its
  // last head). The same shares of the next tile's row go towards L2 as each KV head's is first read.
  template <KvDType T>
  static void scores_in_order_of(const float* q, int32_t n, int32_t m, int32_t group, const uint8_t* const* rows,
                                 int64_t head_bytes, int32_t nt, float (*p)[detail::kTile],
                                 const uint8_t* const* ahead) {
    for (int32_t jj = 0; jj < nt; ++jj) {
      for (int32_t s0 = 0; s0 < m; s0 += 16) {
        const int32_t ms = m - s0 < 16 ? m - s0 : 16;
        __m512 acc[16];
        for (int s = 0; s < 16; s += 4) {
          const float* qs[4];
          const uint8_t* r[4];
          for (int k = 0; k < 4; ++k) {
            const int32_t st = s0 + (s + k < ms ? s + k : ms - 1);
            qs[k] = q + int64_t(st) * n;
            r[k] = rows[jj] + (st / group) * head_bytes;
            if (ahead[jj] != nullptr && s + k < ms && st % group == 0)
              prefetch_lines(ahead[jj] + (st / group) * head_bytes, head_bytes);
          }
          __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
                 a3 = _mm512_setzero_ps();
          for (int32_t i = 0; i < n; i += 16) {
            const __mmask16 mask = first_lanes(n - i);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, qs[0] + i), kv_load16<T>(r[0], i, mask), a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, qs[1] + i), kv_load16<T>(r[1], i, mask), a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, qs[2] + i), kv_load16<T>(r[2], i, mask), a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, qs[3] + i), kv_load16<T>(r[3], i, mask), a3);
          }
          acc[s] = a0, acc[s + 1] = a1, acc[s + 2] = a2, acc[s + 3] = a3;
        }
        alignas(64) float sums[16];
        _mm512_store_ps(sums, transpose_sum16(acc));
        for (int32_t s = 0; s < ms; ++s) p[s0 + s][jj] = sums[s];
      }
    }
  }
  static void scores_in_order(KvDType type, const float* q, int32_t n, int32_t m, int32_t group,
                              const uint8_t* const* rows, int64_t head_bytes, int32_t nt, float (*p)[detail::kTile],
                              const uint8_t* const* ahead) {
    detail::with_kv_type(type,
                         [&]<KvDType T>() { scores_in_order_of<T>(q, n, m, group, rows, head_bytes, nt, p, ahead); });
  }
  // Weighted V rows: per four positions, each query head's share of the rows added into its output (the output's
  // values loaded once for the four, the rows added in position order), the next tile's same four shares going
  // towards L2 as each KV head's are first read.
  template <KvDType T>
  static void weighted_in_order_of(const float (*w)[detail::kTile], const uint8_t* const* rows, int64_t head_bytes,
                                   int32_t m, int32_t group, int32_t nt, float* y, int32_t n,
                                   const uint8_t* const* ahead) {
    int32_t jj = 0;
    for (; jj + 4 <= nt; jj += 4) {
      for (int32_t s = 0; s < m; ++s) {
        const int64_t off = (s / group) * head_bytes;
        if (s % group == 0)
          for (int k = 0; k < 4; ++k)
            if (ahead[jj + k] != nullptr) prefetch_lines(ahead[jj + k] + off, head_bytes);
        const uint8_t *r0 = rows[jj] + off, *r1 = rows[jj + 1] + off, *r2 = rows[jj + 2] + off,
                      *r3 = rows[jj + 3] + off;
        const __m512 w0 = _mm512_set1_ps(w[s][jj]), w1 = _mm512_set1_ps(w[s][jj + 1]),
                     w2 = _mm512_set1_ps(w[s][jj + 2]), w3 = _mm512_set1_ps(w[s][jj + 3]);
        float* ys = y + int64_t(s) * n;
        for (int32_t i = 0; i < n; i += 16) {
          const __mmask16 mask = first_lanes(n - i);
          __m512 acc = _mm512_maskz_loadu_ps(mask, ys + i);
          acc = _mm512_fmadd_ps(w0, kv_load16<T>(r0, i, mask), acc);
          acc = _mm512_fmadd_ps(w1, kv_load16<T>(r1, i, mask), acc);
          acc = _mm512_fmadd_ps(w2, kv_load16<T>(r2, i, mask), acc);
          acc = _mm512_fmadd_ps(w3, kv_load16<T>(r3, i, mask), acc);
          _mm512_mask_storeu_ps(ys + i, mask, acc);
        }
      }
    }
    for (; jj < nt; ++jj) {
      for (int32_t s = 0; s < m; ++s) {
        const uint8_t* r = rows[jj] + (s / group) * head_bytes;
        if (ahead[jj] != nullptr && s % group == 0) prefetch_lines(ahead[jj] + (s / group) * head_bytes, head_bytes);
        const __m512 wj = _mm512_set1_ps(w[s][jj]);
        float* ys = y + int64_t(s) * n;
        for (int32_t i = 0; i < n; i += 16) {
          const __mmask16 mask = first_lanes(n - i);
          _mm512_mask_storeu_ps(ys + i, mask,
                                _mm512_fmadd_ps(wj, kv_load16<T>(r, i, mask), _mm512_maskz_loadu_ps(mask, ys + i)));
        }
      }
    }
  }
  static void weighted_in_order(KvDType type, const float (*w)[detail::kTile], const uint8_t* const* rows,
                                int64_t head_bytes, int32_t m, int32_t group, int32_t nt, float* y, int32_t n,
                                const uint8_t* const* ahead) {
    detail::with_kv_type(
        type, [&]<KvDType T>() { weighted_in_order_of<T>(w, rows, head_bytes, m, group, nt, y, n, ahead); });
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
