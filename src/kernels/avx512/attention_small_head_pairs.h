// attention_small_head_pairs: the AVX-512 level's paged attention for small heads (head_dim <= 8, groups under 8
// query heads): the two query heads of a pair in the two halves of a zmm, eight consecutive positions in each half's
// lanes. Owns the pair scan, its chunk layout and its merge; the 8-lane form (and the shared transpose of a block of
// rows) stays in attention_small_heads_impl.h, which the avx2 level uses. Include it only from avx512/attention.cc.
//
// Why its own form: the pair scan is most of a small model's cost per verified speculative token (each extra query
// pays it whole, while the K/V transposes are shared by the queries of a work item). Against the generic form it
// (a) keeps each transposed 8-position block twice, in both halves of a 64-byte row, so the scan reads it with the
// FMA's own full-width load rather than a 256-bit broadcast a use; (b) takes chunks of 256 positions (a single one up
// to that context), so a query's state stays in registers instead of passing through memory every 64 positions; (c)
// computes scores in base 2 (the query pre-scaled by log2 e) with exp2 as a polynomial and vscalefps, which needs no
// range clamp and gives masked scores exactly 0. Together these make the pair scan markedly faster (measured: see
// the commit that introduced it).
//
// Bits: a query's arithmetic depends only on its own positions (chunks at multiples of kPairChunk positions whatever
// the work item; a vector wholly outside the query's context or window skipped, a masked position's score -3e38, so
// its weight is exactly 0 once its lane has seen a position of the query, and a lane that has seen none weighs
// exactly 0 at the merge), so a query gets the bits of a work item of its own, as speculative verification requires.
#pragma once

#include <immintrin.h>
#include <math.h>  // tanhf, exp2f (see paged_attention_impl.h)

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/attention_small_heads_impl.h"
#include "kernels/avx512/vec_f32x16.h"

namespace pagoda::kernels::avx512 {

// Positions per chunk: transposed K and V at 64 bytes a row of 8 positions, 32 KiB, in L1 while the queries pass.
inline constexpr int32_t kPairChunk = 256;
inline constexpr int32_t kPairVectors = kPairChunk / 8;
inline constexpr float kLog2e = 1.44269504088896341f;

// 2^x for x <= 128 (-inf and anything below -150 give 0): 2^round(x) times a degree-6 polynomial of the rest
// (|rest| <= 1/2; relative error under 1e-7, fitted for this kernel), the power by vscalefps.
inline __m512 exp2_ps(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.5345803694799542e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3399930903688073e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618489071726799e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550328642129898e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022646248340607e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471824645996e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// One pair's online softmax, lane by lane (lane l of each half: the positions j = l mod 8 of its head).
struct PairState {
  __m512 max, sum, out[8];
};

// A chunk's transposed rows: row[v][i] = value i of positions 8v .. 8v+7, in lanes 0-7 and again in lanes 8-15.
struct alignas(64) PairChunk {
  float row[kPairVectors][8][16];
  float scale[kPairVectors][16];  // an int8 side: each position's scale, the same way
};

// Transposes the np positions' rows of type T (base + slots[p] * row_bytes) into c; zeros past head_dim and from np
// on.
template <KvDType T>
inline void transpose_pair_rows(const uint8_t* base, const int64_t* slots, int64_t row_bytes, int32_t np, int32_t hd,
                                PairChunk& c) {
  for (int32_t v = 0; v < (np + 7) / 8; ++v) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k)
      r[k] = 8 * v + k < np ? detail::small_head_row<F32x8Vl, T>(base + slots[8 * v + k] * row_bytes, hd)
                            : _mm256_setzero_ps();
    detail::transpose8x8<F32x8Vl>(r);
    for (int i = 0; i < 8; ++i) {
      _mm256_store_ps(c.row[v][i], r[i]);
      _mm256_store_ps(c.row[v][i] + 8, r[i]);
    }
  }
}

// One query's pair (q: its two heads' 8 values each, times scale * log2 e, zeros past head_dim and for a missing
// second head) over the nv vectors of a chunk starting at position c0. softcap2: the cap times log2 e, or 0.
inline void small_head_pair_scan(const PairChunk& kc, const PairChunk& vc, bool k_scaled, bool v_scaled, int32_t nv,
                                 int32_t c0, int32_t begin, int32_t ctx, const float* q, float softcap2,
                                 PairState& st) {
  const int32_t first = begin > c0 ? (begin - c0) / 8 : 0;
  const int32_t end = ctx - c0 < 8 * nv ? (ctx - c0 + 7) / 8 : nv;
  if (first >= end) return;
  const __m512 masked = _mm512_set1_ps(detail::kSmallHeadMasked);
  __m512 s[kPairVectors];
  __m512 chunk_max = masked;
  {
    const __m512 both = _mm512_loadu_ps(q);
    __m512 qv[8];
    for (int i = 0; i < 8; ++i)
      qv[i] = _mm512_permutexvar_ps(
          _mm512_setr_epi32(i, i, i, i, i, i, i, i, 8 + i, 8 + i, 8 + i, 8 + i, 8 + i, 8 + i, 8 + i, 8 + i), both);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
    for (int32_t v = first; v < end; ++v) {
      const int32_t j0 = c0 + 8 * v;
      // Two chains of four: the adds of one score's eight products no longer wait on each other in a row.
      __m512 even = _mm512_mul_ps(qv[0], _mm512_load_ps(kc.row[v][0]));
      __m512 odd = _mm512_mul_ps(qv[1], _mm512_load_ps(kc.row[v][1]));
      for (int i = 2; i < 8; i += 2) {
        even = _mm512_fmadd_ps(qv[i], _mm512_load_ps(kc.row[v][i]), even);
        odd = _mm512_fmadd_ps(qv[i + 1], _mm512_load_ps(kc.row[v][i + 1]), odd);
      }
      __m512 sv = _mm512_add_ps(even, odd);
      if (k_scaled) sv = _mm512_mul_ps(sv, _mm512_load_ps(kc.scale[v]));
      if (softcap2 > 0.0f) {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, sv);
        detail::cap_scores<F32x8Vl>(lanes, 16, softcap2);
        sv = _mm512_load_ps(lanes);
      }
      if (j0 < begin || j0 + 8 > ctx) {
        const __m512i pos = _mm512_add_epi32(_mm512_set1_epi32(j0), lane);
        const __mmask16 valid = _mm512_cmpge_epi32_mask(pos, _mm512_set1_epi32(begin)) &
                                _mm512_cmplt_epi32_mask(pos, _mm512_set1_epi32(ctx));
        sv = _mm512_mask_blend_ps(valid, masked, sv);
      }
      s[v] = sv;
      chunk_max = _mm512_max_ps(chunk_max, sv);
    }
  }
  __m512 m = st.max, sum = st.sum, out[8];
  for (int i = 0; i < 8; ++i) out[i] = st.out[i];
  const __m512 new_max = _mm512_max_ps(m, chunk_max);
  if (_mm512_cmp_ps_mask(new_max, m, _CMP_GT_OQ) != 0) {
    const __m512 correction = exp2_ps(_mm512_sub_ps(m, new_max));
    sum = _mm512_mul_ps(sum, correction);
    for (int i = 0; i < 8; ++i) out[i] = _mm512_mul_ps(out[i], correction);
    m = new_max;
  }
  for (int32_t v = first; v < end; ++v) {
    __m512 p = exp2_ps(_mm512_sub_ps(s[v], m));
    sum = _mm512_add_ps(sum, p);
    if (v_scaled) p = _mm512_mul_ps(p, _mm512_load_ps(vc.scale[v]));
    for (int i = 0; i < 8; ++i) out[i] = _mm512_fmadd_ps(p, _mm512_load_ps(vc.row[v][i]), out[i]);
  }
  st.max = m;
  st.sum = sum;
  for (int i = 0; i < 8; ++i) st.out[i] = out[i];
}

// Each lane's max over its 8-lane half, in every lane of the half.
inline __m512 half_max(__m512 x) {
  x = _mm512_max_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)));
  x = _mm512_max_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
}
inline __m512 half_sum(__m512 x) {
  x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)));
  x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
}

// The pair's output: lane i of half h = head h's value i, its lanes' weighted rows rescaled to the head's max and
// summed, over the head's total weight.
// `sinks`: the pair's two sink logits (AttentionArgs::sinks; the second ignored past the group), or nullptr.
inline __m512 merge_pair(const PairState& st, const float* sinks, bool second_head) {
  const __m512 head_max = half_max(st.max);
  const __m512 w = exp2_ps(_mm512_sub_ps(st.max, head_max));
  __m512 total = half_sum(_mm512_mul_ps(w, st.sum));
  if (sinks != nullptr) {
    // Each head's sink weight, exp(sink - max) in the scan's log2 units, added to its half's total.
    alignas(64) float m[16];
    _mm512_store_ps(m, head_max);
    const float wa = exp2f(sinks[0] * kLog2e - m[0]);
    const float wb = second_head ? exp2f(sinks[1] * kLog2e - m[8]) : 0.0f;
    total = _mm512_add_ps(total, _mm512_insertf32x8(_mm512_set1_ps(wa), _mm256_set1_ps(wb), 1));
  }
  __m512 o[8];
  for (int i = 0; i < 8; ++i) o[i] = _mm512_mul_ps(w, st.out[i]);
  // Sums of each 4-lane block: t[k] lane (block b) = [o_2k's lanes 0+2, o_2k+1's 0+2, o_2k's 1+3, o_2k+1's 1+3].
  __m512 t[4];
  for (int k = 0; k < 4; ++k)
    t[k] = _mm512_add_ps(_mm512_unpacklo_ps(o[2 * k], o[2 * k + 1]), _mm512_unpackhi_ps(o[2 * k], o[2 * k + 1]));
  // u0 block b: the block's sums of values 0..3; u1: of values 4..7.
  const __m512 u0 = _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 u1 = _mm512_add_ps(_mm512_shuffle_ps(t[2], t[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(t[2], t[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // Blocks 0 + 1 are head a's lanes, 2 + 3 head b's: [a 0..3 | b 0..3 | a 4..7 | b 4..7], then in order.
  const __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_div_ps(_mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(3, 1, 2, 0)), total);
}

inline void attention_small_head_pairs(const AttentionArgs& a) {
  const int32_t hd = a.head_dim;
  const int32_t nh = a.num_q_heads;
  const int32_t pairs = (nh + 1) / 2;
  const bool k_int8 = a.k_type == KvDType::kInt8, v_int8 = a.v_type == KvDType::kInt8;
  // Queries per pass: the states of every (query, pair) of the pass live in memory between chunks.
  const int32_t max_queries = 16 / nh;
  PairChunk kc, vc;
  PairState state[16];
  alignas(64) float qs[16][16];  // each (query, pair): its heads times scale * log2 e, zeros past head_dim
  int64_t slots[kPairChunk];
  const float q_scale = a.scale * kLog2e;
  const float softcap2 = a.softcap > 0.0f ? a.softcap * kLog2e : 0.0f;
  const __mmask8 head_lanes = __mmask8((1u << hd) - 1);
  for (int32_t q0 = 0; q0 < a.num_queries; q0 += max_queries) {
    const detail::SmallHeadPass pass = detail::small_head_pass<F32x8Vl>(a, q0, max_queries);
    const int32_t nq = pass.num_queries, pass_ctx = pass.pass_ctx;
    const int32_t* ctx = pass.ctx;
    const int32_t* begin = pass.begin;
    for (int32_t q = 0; q < nq; ++q) {
      const float* qp = a.q + (q0 + q) * a.q_stride;
      for (int32_t p = 0; p < pairs; ++p) {
        PairState& s = state[q * pairs + p];
        s.max = _mm512_set1_ps(detail::kSmallHeadMasked);
        s.sum = _mm512_setzero_ps();
        for (int i = 0; i < 8; ++i) s.out[i] = _mm512_setzero_ps();
        float* qv = qs[q * pairs + p];
        for (int32_t h = 0; h < 2; ++h)
          for (int32_t i = 0; i < 8; ++i)
            qv[8 * h + i] = i < hd && 2 * p + h < nh ? qp[int64_t(2 * p + h) * hd + i] * q_scale : 0.0f;
      }
    }
    // Chunks at multiples of kPairChunk positions whatever the queries, from the one holding the first query's
    // first position (the earliest of all the queries').
    for (int32_t c0 = begin[0] / kPairChunk * kPairChunk; c0 < pass_ctx; c0 += kPairChunk) {
      const int32_t np = pass_ctx - c0 < kPairChunk ? pass_ctx - c0 : kPairChunk;
      const int32_t nv = (np + 7) / 8;
      detail::chunk_slots<F32x8Vl>(a, c0, np, slots);
      for (int32_t p = 0; p < nv * 8; ++p) {
        if (k_int8) {
          const float ks = p < np ? a.k_scale[slots[p] * a.scale_stride] : 0.0f;
          kc.scale[p / 8][p % 8] = kc.scale[p / 8][p % 8 + 8] = ks;
        }
        if (v_int8) {
          const float vs = p < np ? a.v_scale[slots[p] * a.scale_stride] : 0.0f;
          vc.scale[p / 8][p % 8] = vc.scale[p / 8][p % 8 + 8] = vs;
        }
      }
      detail::with_kv_type(a.k_type,
                           [&]<KvDType T>() { transpose_pair_rows<T>(a.k, slots, a.k_row_bytes, np, hd, kc); });
      detail::with_kv_type(a.v_type,
                           [&]<KvDType T>() { transpose_pair_rows<T>(a.v, slots, a.v_row_bytes, np, hd, vc); });
      for (int32_t q = 0; q < nq; ++q)
        for (int32_t p = 0; p < pairs; ++p)
          small_head_pair_scan(kc, vc, k_int8, v_int8, nv, c0, begin[q], ctx[q], qs[q * pairs + p], softcap2,
                               state[q * pairs + p]);
    }
    for (int32_t q = 0; q < nq; ++q) {
      float* out = a.out + (q0 + q) * a.q_stride;
      for (int32_t p = 0; p < pairs; ++p) {
        const __m512 r =
            merge_pair(state[q * pairs + p], a.sinks != nullptr ? a.sinks + 2 * p : nullptr, 2 * p + 1 < nh);
        _mm256_mask_storeu_ps(out + int64_t(2 * p) * hd, head_lanes, _mm512_castps512_ps256(r));
        if (2 * p + 1 < nh)
          _mm256_mask_storeu_ps(out + int64_t(2 * p + 1) * hd, head_lanes, _mm512_extractf32x8_ps(r, 1));
      }
    }
  }
}

}  // namespace pagoda::kernels::avx512
