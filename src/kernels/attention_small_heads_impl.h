// attention_small_heads_impl: paged attention for small heads (head_dim <= 8) in groups of under 8 query heads, with
// eight consecutive positions in the lanes of a ymm: the avx2 level's kernel, and the 8 x 8 transpose and row loads
// the AVX-512 level's pair form (avx512/attention_small_head_pairs.h) shares. Written over an 8-lane vector type V of
// internal linkage (avx2/attention.cc's F32x8, avx512's F32x8Vl) and raw 256-bit intrinsics that both compile.
//
// Why: at head_dim 8 (the bundled stories260K model) the keys-in-lanes loop (paged_attention_impl.h) fills half a
// vector per key and waits on a chain of dependent adds per position; here a chunk of K and V rows is transposed once
// (8 x 8 blocks), after which each query head's scores are 8 FMAs per 8 positions and its weighted V rows 8 more, with
// no horizontal work until the end. The transposed chunk is shared by every query head of the group and every query
// of the work item, so the verification of k speculative tokens (k + 1 consecutive queries) reads and transposes K
// and V once rather than k + 1 times; the more queries, the larger the gain (measured: see the commit that
// introduced it).
//
// Each lane keeps its own online softmax (running max, sum and weighted V rows of the positions j = lane mod 8); the
// lanes merge at the end. A query's arithmetic depends only on its own positions (the chunks and their vectors sit at
// multiples of 64 and 8 positions whatever the work item; positions outside the query's context or window weigh
// exactly 0; a chunk or vector wholly outside it is skipped), so a query gets the bits of a work item of its own.
// Results are within f32 rounding of paged_attention_impl.h's. Include it only from the ISA folders.
#pragma once

#include <immintrin.h>
#include <math.h>  // tanhf: a plain C function (see paged_attention_impl.h)

#include <cstdint>
#include <cstring>

#include "kernels/attention_args.h"
#include "kernels/kv_type_switch.h"

namespace pagoda::kernels::detail {

// Larger heads fill a vector per key in the keys-in-lanes loop: at head_dim 16 that loop was the faster for one
// query though this one was for five, and the choice must not depend on the number of queries (speculative
// verification must give plain decoding's bits), so plain decoding's case decides.
inline constexpr int32_t kSmallHeadMaxDim = 8;
inline constexpr int32_t kSmallHeadMaxGroup = 7;  // 8 and more query heads take the heads-in-lanes kernel

// Positions per chunk of transposed K and V (8 KiB, in L1 while the heads and queries pass over it).
inline constexpr int32_t kSmallHeadChunk = 64;
inline constexpr float kSmallHeadMasked = -3.0e38f;  // below any score; finite, so max - it is no nan

// r[i] <- column i of the 8 x 8 block whose row k is r[k]. V only keeps the instantiations apart (see above).
template <class V>
inline void transpose8x8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  __m256 u[8];
  for (int k = 0; k < 2; ++k)
    for (int h = 0; h < 2; ++h) {
      u[4 * k + h] = _mm256_shuffle_ps(t[4 * k + h], t[4 * k + h + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * k + h + 2] = _mm256_shuffle_ps(t[4 * k + h], t[4 * k + h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  // u[0]: column 0 of rows 0-3 | column 4 of rows 0-3; u[2]: columns 1 / 5; u[1]: 2 / 6; u[3]: 3 / 7 (u[4..7] rows
  // 4-7).
  const int col_of_u[4] = {0, 2, 1, 3};
  for (int k = 0; k < 4; ++k) {
    r[col_of_u[k]] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    r[col_of_u[k] + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}

// The n (<= 8) values of a row of type T as f32 (an int8 row's unscaled), zeros past them (their memory not read).
// A q8_0 or q4_0 head holds at least 32 values and never comes here; their values are read the same way all the
// same.
template <class V, KvDType T>
inline __m256 small_head_row(const uint8_t* row, int32_t n) {
  if constexpr (T == KvDType::kF32) {
    if (n == 8) return _mm256_loadu_ps(reinterpret_cast<const float*>(row));
    alignas(32) float tmp[8] = {};
    std::memcpy(tmp, row, sizeof(float) * size_t(n));
    return _mm256_load_ps(tmp);
  } else if constexpr (T == KvDType::kInt8) {
    int64_t bytes = 0;
    std::memcpy(&bytes, row, size_t(n));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
  } else if constexpr (T == KvDType::kF16 || T == KvDType::kBF16) {
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, row, 2 * size_t(n));
    const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    if constexpr (T == KvDType::kF16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    uint16_t d;
    std::memcpy(&d, row, 2);
    alignas(32) float tmp[8] = {};
    for (int32_t i = 0; i < n; ++i) {
      if constexpr (T == KvDType::kQ8_0)
        tmp[i] = float(int8_t(row[2 + i]));
      else
        tmp[i] = float((row[2 + i] & 0x0f) - 8);
    }
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(d)), _mm256_load_ps(tmp));
  }
}

// t[v][i] (lanes: positions 8v .. 8v+7 of the chunk) = value i of those positions' rows (base + slots[p] *
// row_bytes), zeros past head_dim; positions from np on: zeros.
template <class V, KvDType T>
inline void transpose_rows(const uint8_t* base, const int64_t* slots, int64_t row_bytes, int32_t np, int32_t hd,
                           __m256 (*t)[8]) {
  for (int32_t v = 0; v < (np + 7) / 8; ++v) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k)
      r[k] = 8 * v + k < np ? small_head_row<V, T>(base + slots[8 * v + k] * row_bytes, hd) : _mm256_setzero_ps();
    transpose8x8<V>(r);
    for (int i = 0; i < 8; ++i) t[v][i] = r[i];
  }
}

// cap * tanh(s / cap) for each of n scores, as paged_attention_impl.h computes it. A template only to keep each
// folder's copy apart (see transpose8x8).
template <class V>
inline void cap_scores(float* lanes, int32_t n, float softcap) {
  const float inv_cap = 1.0f / softcap;
  for (int32_t i = 0; i < n; ++i) lanes[i] = softcap * tanhf(lanes[i] * inv_cap);
}

// The queries of one pass over the chunks (at most 16, from query q0 on): query q0 + q sees positions begin[q] ..
// ctx[q] - 1; the pass's last query sees up to pass_ctx.
struct SmallHeadPass {
  int32_t num_queries = 0;
  int32_t pass_ctx = 0;
  int32_t ctx[16] = {}, begin[16] = {};
};
// A template only to keep each folder's copy apart (see transpose8x8), as chunk_slots.
template <class V>
inline SmallHeadPass small_head_pass(const AttentionArgs& a, int32_t q0, int32_t max_queries) {
  SmallHeadPass p;
  p.num_queries = a.num_queries - q0 < max_queries ? a.num_queries - q0 : max_queries;
  p.pass_ctx = a.num_ctx - (a.num_queries - q0 - p.num_queries);
  for (int32_t q = 0; q < p.num_queries; ++q) {
    p.ctx[q] = p.pass_ctx - (p.num_queries - 1 - q);
    p.begin[q] = window_begin(p.ctx[q], a.window);
  }
  return p;
}

// slots[p] = the cache slot of position c0 + p, p < np, block by block.
template <class V>
inline void chunk_slots(const AttentionArgs& a, int32_t c0, int32_t np, int64_t* slots) {
  for (int32_t p = 0, b = c0 / a.block_size, offset = c0 % a.block_size; p < np; ++b, offset = 0) {
    const int64_t first_slot = int64_t(a.blocks[b]) * a.block_size;
    for (; offset < a.block_size && p < np; ++offset, ++p) slots[p] = first_slot + offset;
  }
}

// The per-lane online softmax of one query head over its positions (lane l: the positions j = l mod 8), merged into
// its output at the end.
struct SmallHeadState {
  __m256 max, sum, out[8];
};

// One query head over the nv vectors of a transposed chunk starting at position c0; its state in registers across
// the chunk. Rows are 8 values (a smaller head's are zero past head_dim, as its scaled query). The
// chunk's scores come first, so the running max (and the rescale of what was summed) changes at most once a chunk:
// each lane's max rose in most vectors of a short context when it was updated vector by vector.
template <class V>
void small_head_scan(const __m256 (*kt)[8], const __m256 (*vt)[8], const float* k_scale, const float* v_scale,
                     int32_t nv, int32_t c0, int32_t begin, int32_t ctx, const float* qh, float softcap,
                     SmallHeadState& st) {
  // The chunk's vectors this query sees at least one position of.
  const int32_t first = begin > c0 ? (begin - c0) / 8 : 0;
  const int32_t end = ctx - c0 < 8 * nv ? (ctx - c0 + 7) / 8 : nv;
  if (first >= end) return;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  __m256 s[kSmallHeadChunk / 8], valid[kSmallHeadChunk / 8];
  __m256 chunk_max = _mm256_set1_ps(kSmallHeadMasked);
  for (int32_t v = first; v < end; ++v) {
    const int32_t j0 = c0 + 8 * v;  // the vector's first position
    __m256 sv = _mm256_setzero_ps();
    for (int i = 0; i < 8; ++i) sv = _mm256_fmadd_ps(_mm256_broadcast_ss(qh + i), kt[v][i], sv);
    if (k_scale != nullptr) sv = _mm256_mul_ps(sv, _mm256_load_ps(k_scale + 8 * v));
    if (softcap > 0.0f) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, sv);
      cap_scores<V>(lanes, 8, softcap);
      sv = _mm256_load_ps(lanes);
    }
    // Lanes outside [begin, ctx) of this query weigh exactly 0.
    valid[v] = all;
    if (j0 < begin || j0 + 8 > ctx) {
      const __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(j0), lane);
      valid[v] = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(begin), pos),
                                                         _mm256_cmpgt_epi32(_mm256_set1_epi32(ctx), pos)));
      sv = _mm256_blendv_ps(_mm256_set1_ps(kSmallHeadMasked), sv, valid[v]);
    }
    s[v] = sv;
    chunk_max = _mm256_max_ps(chunk_max, sv);
  }
  __m256 m = st.max, sum = st.sum, out[8];
  for (int i = 0; i < 8; ++i) out[i] = st.out[i];
  const __m256 new_max = _mm256_max_ps(m, chunk_max);
  if (_mm256_movemask_ps(_mm256_cmp_ps(new_max, m, _CMP_GT_OQ)) != 0) {
    const __m256 correction = V::exp(_mm256_sub_ps(m, new_max));
    sum = _mm256_mul_ps(sum, correction);
    for (int i = 0; i < 8; ++i) out[i] = _mm256_mul_ps(out[i], correction);
    m = new_max;
  }
  for (int32_t v = first; v < end; ++v) {
    __m256 p = _mm256_and_ps(V::exp(_mm256_sub_ps(s[v], m)), valid[v]);
    sum = _mm256_add_ps(sum, p);
    if (v_scale != nullptr) p = _mm256_mul_ps(p, _mm256_load_ps(v_scale + 8 * v));
    for (int i = 0; i < 8; ++i) out[i] = _mm256_fmadd_ps(p, vt[v][i], out[i]);
  }
  st.max = m;
  st.sum = sum;
  for (int i = 0; i < 8; ++i) st.out[i] = out[i];
}

template <class V>
void attention_small_heads(const AttentionArgs& a) {
  const int32_t hd = a.head_dim;
  const int32_t nh = a.num_q_heads;
  const bool k_int8 = a.k_type == KvDType::kInt8, v_int8 = a.v_type == KvDType::kInt8;
  // Queries per pass: the states of every (query, head) of the pass live in memory between chunks.
  const int32_t max_queries = 16 / nh;
  alignas(32) __m256 kt[kSmallHeadChunk / 8][8];
  alignas(32) __m256 vt[kSmallHeadChunk / 8][8];
  alignas(32) float k_scale[kSmallHeadChunk], v_scale[kSmallHeadChunk];
  SmallHeadState state[16];
  alignas(32) float qs[16][8];  // query heads times the score scale, zeros past head_dim
  int64_t slots[kSmallHeadChunk];
  for (int32_t q0 = 0; q0 < a.num_queries; q0 += max_queries) {
    const SmallHeadPass pass = small_head_pass<V>(a, q0, max_queries);
    const int32_t nq = pass.num_queries, pass_ctx = pass.pass_ctx;
    const int32_t* ctx = pass.ctx;
    const int32_t* begin = pass.begin;
    for (int32_t q = 0; q < nq; ++q) {
      const float* qp = a.q + (q0 + q) * a.q_stride;
      for (int32_t h = 0; h < nh; ++h) {
        SmallHeadState& s = state[q * nh + h];
        s.max = _mm256_set1_ps(kSmallHeadMasked);
        s.sum = _mm256_setzero_ps();
        for (int32_t i = 0; i < 8; ++i) {
          s.out[i] = _mm256_setzero_ps();
          qs[q * nh + h][i] = i < hd ? qp[int64_t(h) * hd + i] * a.scale : 0.0f;
        }
      }
    }
    // Chunks at multiples of kSmallHeadChunk positions whatever the queries, from the one holding the first query's
    // first position (the earliest of all the queries').
    for (int32_t c0 = begin[0] / kSmallHeadChunk * kSmallHeadChunk; c0 < pass_ctx; c0 += kSmallHeadChunk) {
      const int32_t np = pass_ctx - c0 < kSmallHeadChunk ? pass_ctx - c0 : kSmallHeadChunk;
      const int32_t nv = (np + 7) / 8;
      chunk_slots<V>(a, c0, np, slots);
      for (int32_t p = 0; p < nv * 8; ++p) {
        if (k_int8) k_scale[p] = p < np ? a.k_scale[slots[p] * a.scale_stride] : 0.0f;
        if (v_int8) v_scale[p] = p < np ? a.v_scale[slots[p] * a.scale_stride] : 0.0f;
      }
      with_kv_type(a.k_type, [&]<KvDType T>() { transpose_rows<V, T>(a.k, slots, a.k_row_bytes, np, hd, kt); });
      with_kv_type(a.v_type, [&]<KvDType T>() { transpose_rows<V, T>(a.v, slots, a.v_row_bytes, np, hd, vt); });
      const float* ks = k_int8 ? k_scale : nullptr;
      const float* vs = v_int8 ? v_scale : nullptr;
      for (int32_t q = 0; q < nq; ++q) {
        for (int32_t h = 0; h < nh; ++h)
          small_head_scan<V>(kt, vt, ks, vs, nv, c0, begin[q], ctx[q], qs[q * nh + h], a.softcap, state[q * nh + h]);
      }
    }
    // Merge the lanes: each lane's sum and weighted rows rescaled to the query head's overall max.
    for (int32_t q = 0; q < nq; ++q) {
      float* out = a.out + (q0 + q) * a.q_stride;
      for (int32_t h = 0; h < nh; ++h) {
        SmallHeadState& st = state[q * nh + h];
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, st.max);
        float overall = lanes[0];
        for (int k = 1; k < 8; ++k) overall = lanes[k] > overall ? lanes[k] : overall;
        const __m256 w = V::exp(_mm256_sub_ps(st.max, _mm256_set1_ps(overall)));
        _mm256_store_ps(lanes, _mm256_mul_ps(w, st.sum));
        float total = 0.0f;
        for (float x : lanes) total += x;
        if (a.sinks != nullptr) total += expf(a.sinks[h] - overall);
        const float inv = 1.0f / total;
        __m256 r[8];
        for (int k = 0; k < 8; ++k) r[k] = _mm256_mul_ps(w, st.out[k]);
        transpose8x8<V>(r);  // r[l] lane i = lane l of value i's sum
        __m256 acc = r[0];
        for (int l = 1; l < 8; ++l) acc = _mm256_add_ps(acc, r[l]);
        _mm256_store_ps(lanes, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
        for (int32_t i = 0; i < hd; ++i) out[int64_t(h) * hd + i] = lanes[i];
      }
    }
  }
}

}  // namespace pagoda::kernels::detail
