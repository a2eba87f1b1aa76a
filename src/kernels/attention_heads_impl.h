// attention_heads_impl: paged attention with the query heads of a work item in the lanes of a vector (up to kWidth
// heads of one KV head, the grouped-query case), written once over a vector type V and instantiated per instruction
// set (avx2/attention.cc; avx512/attention.cc at 16 and 8 lanes). Each K row then feeds every head with one broadcast
// per value, the scores come out as vectors over the heads with no horizontal sums, and the online softmax and the
// weighted V rows run on whole vectors: the same flash-style pass as paged_attention_impl.h, in another order (results
// within f32 rounding of it), with its sliding window and soft cap. Several consecutive queries of one sequence
// (prefill) share each K and V value loaded. V provides kWidth, Reg, loadu, storeu, set1, zero, add, sub, mul, max, exp
// and widen_row<T>(row, dst, n) (dst[0..n) = a KvDType T row's n values as f32): a cache not in f32 has each tile's
// rows converted into an L1 buffer of 32 rows as the tile is reached, since every value is then broadcast to the
// lanes. Include it only from the ISA folders, with a V of internal linkage.
#pragma once

#include <math.h>  // tanhf: a plain C function (see paged_attention_impl.h)

#include <cstdint>

#include "kernels/attention_args.h"
#include "kernels/kv_type_switch.h"

namespace pagoda::kernels::detail {

inline constexpr int32_t kHeadsTile = 32;         // positions per tile, as paged_attention_impl.h
inline constexpr int32_t kHeadsMaxHeadDim = 256;  // larger heads take the other kernel
inline constexpr float kMaskedScore = -3.0e38f;   // below any score; finite, so max - it is no nan

// rows[jj] = the tile's row jj of one side as f32: in the cache (f32) or converted into buf[jj].
template <class V>
inline void tile_rows(KvDType type, const uint8_t* base, int64_t row_bytes, const int64_t* slots, int32_t nt,
                      int32_t hd, float (*buf)[kHeadsMaxHeadDim], const float** rows) {
  if (type == KvDType::kF32) {
    for (int32_t jj = 0; jj < nt; ++jj) rows[jj] = reinterpret_cast<const float*>(base + slots[jj] * row_bytes);
    return;
  }
  with_kv_type(type, [&]<KvDType T>() {
    for (int32_t jj = 0; jj < nt; ++jj) {
      V::template widen_row<T>(base + slots[jj] * row_bytes, buf[jj], hd);
      rows[jj] = buf[jj];
    }
  });
}

// Heads h0 .. h0 + nh - 1 (nh <= V::kWidth) of work item `a`, whose kQueries (== a.num_queries) consecutive queries
// share each K and V value loaded: a register tile of kQueries queries by kStep positions (scores) or dimensions
// (weighted V rows). A query's arithmetic is the same whatever kQueries: the positions outside its own context (past
// it, or before its sliding window) are masked (weight exactly 0, a tile wholly outside rescales by exactly 1), and
// the tiles sit at multiples of kHeadsTile whatever the queries, so it gets the bits of a work item of its own.
template <class V, int kQueries>
void attention_heads(const AttentionArgs& a, int32_t h0, int32_t nh) {
  using Reg = typename V::Reg;
  constexpr int W = V::kWidth;
  constexpr int kStep = 8 / kQueries > 1 ? 8 / kQueries : 1;  // kQueries * kStep accumulators (8 of 16 registers)
  const int32_t hd = a.head_dim;
  // qT[q][i][h] = query q's head h0 + h at i, times the score scale; zero lanes past nh. outT likewise.
  alignas(64) float qT[kQueries][kHeadsMaxHeadDim][W];
  alignas(64) float outT[kQueries][kHeadsMaxHeadDim][W];
  int32_t ctx[kQueries], begin[kQueries];  // query q sees positions begin[q] .. ctx[q] - 1
  for (int q = 0; q < kQueries; ++q) {
    ctx[q] = a.num_ctx - (kQueries - 1 - q);
    begin[q] = window_begin(ctx[q], a.window);
    const float* qs = a.q + q * a.q_stride;
    for (int32_t i = 0; i < hd; ++i)
      for (int h = 0; h < W; ++h) {
        qT[q][i][h] = h < nh ? qs[int64_t(h0 + h) * hd + i] * a.scale : 0.0f;
        outT[q][i][h] = 0.0f;
      }
  }
  // Per query and lane; in memory between tiles, so the running state does not hold registers through the loops.
  alignas(64) float running_max[kQueries][W], running_sum[kQueries][W];
  for (int q = 0; q < kQueries; ++q)
    V::storeu(running_max[q], V::set1(kMaskedScore)), V::storeu(running_sum[q], V::zero());
  alignas(64) float p[kQueries][kHeadsTile][W];        // scores, then weights, of the tile's positions
  alignas(64) float kv[kHeadsTile][kHeadsMaxHeadDim];  // caches not in f32: the tile's K (then V) rows as f32
  // The slots of positions j0 .. j0 + n - 1.
  auto slots_of = [&](int32_t j0, int32_t n, int64_t* slots) {
    int32_t b = j0 / a.block_size, offset = j0 % a.block_size;
    for (int32_t jj = 0; jj < n; ++jj) {
      slots[jj] = int64_t(a.blocks[b]) * a.block_size + offset;
      if (++offset == a.block_size) offset = 0, ++b;
    }
  };
  const int64_t k_head_bytes = kv_row_bytes(a.k_type, hd), v_head_bytes = kv_row_bytes(a.v_type, hd);
  // From the tile holding the first query's first position (the earliest of all the queries').
  for (int32_t j0 = begin[0] / kHeadsTile * kHeadsTile; j0 < a.num_ctx; j0 += kHeadsTile) {
    const int32_t nt = a.num_ctx - j0 < kHeadsTile ? a.num_ctx - j0 : kHeadsTile;
    int64_t slots[kHeadsTile], next_slots[kHeadsTile];
    slots_of(j0, nt, slots);
    // The next tile's rows go towards the caches as this one is computed (its K rows now, its V rows before this
    // tile's V): one KV head's rows lie a whole cache row apart, a stride the hardware prefetchers do not run ahead on.
    const int32_t next_nt = a.num_ctx - j0 - nt < kHeadsTile ? a.num_ctx - j0 - nt : kHeadsTile;
    slots_of(j0 + nt, next_nt, next_slots);
    for (int32_t jj = 0; jj < next_nt; ++jj)
      for (int64_t byte = 0; byte < k_head_bytes; byte += 64)
        __builtin_prefetch(a.k + next_slots[jj] * a.k_row_bytes + byte, 0, 2);
    const float* k_rows[kHeadsTile];
    tile_rows<V>(a.k_type, a.k, a.k_row_bytes, slots, nt, hd, kv, k_rows);
    // Scores: p[q][jj] = sum_i qT[q][i] * k[jj][i], kStep positions at a time.
    int32_t jj = 0;
    for (; jj + kStep <= nt; jj += kStep) {
      Reg s[kQueries][kStep];
      for (int q = 0; q < kQueries; ++q)
        for (int k = 0; k < kStep; ++k) s[q][k] = V::zero();
      for (int32_t i = 0; i < hd; ++i) {
        Reg kb[kStep];
        for (int k = 0; k < kStep; ++k) kb[k] = V::set1(k_rows[jj + k][i]);
        for (int q = 0; q < kQueries; ++q) {
          const Reg qv = V::loadu(qT[q][i]);
          for (int k = 0; k < kStep; ++k) s[q][k] = V::fmadd(qv, kb[k], s[q][k]);
        }
      }
      for (int q = 0; q < kQueries; ++q)
        for (int k = 0; k < kStep; ++k) V::storeu(p[q][jj + k], s[q][k]);
    }
    for (; jj < nt; ++jj) {
      Reg s[kQueries];
      for (int q = 0; q < kQueries; ++q) s[q] = V::zero();
      for (int32_t i = 0; i < hd; ++i) {
        const Reg kb = V::set1(k_rows[jj][i]);
        for (int q = 0; q < kQueries; ++q) s[q] = V::fmadd(V::loadu(qT[q][i]), kb, s[q]);
      }
      for (int q = 0; q < kQueries; ++q) V::storeu(p[q][jj], s[q]);
    }
    // Online softmax per query and lane. Positions outside a query's context weigh exactly 0.
    for (int q = 0; q < kQueries; ++q) {
      const int32_t valid = ctx[q] - j0 < nt ? ctx[q] - j0 : nt;  // may be <= 0: a tile wholly past this query
      const int32_t first = begin[q] > j0 ? begin[q] - j0 : 0;    // may be >= nt: a tile wholly before its window
      if (a.k_type == KvDType::kInt8)
        for (jj = 0; jj < nt; ++jj)
          V::storeu(p[q][jj], V::mul(V::loadu(p[q][jj]), V::set1(a.k_scale[slots[jj] * a.scale_stride])));
      if (a.softcap > 0.0f) {
        // s -> cap * tanh(s / cap) lane by lane, as paged_attention_impl.h computes it (only Gemma 2 caps, and its
        // groups of 2 query heads per KV head never come here: no vector tanh for it).
        const float inv_cap = 1.0f / a.softcap;
        for (jj = 0; jj < nt; ++jj)
          for (int h = 0; h < W; ++h) p[q][jj][h] = a.softcap * tanhf(p[q][jj][h] * inv_cap);
      }
      Reg tile_max = V::set1(kMaskedScore);
      for (jj = first; jj < valid; ++jj) tile_max = V::max(tile_max, V::loadu(p[q][jj]));
      const Reg old_max = V::loadu(running_max[q]);
      const Reg new_max = V::max(old_max, tile_max);
      const Reg correction = V::exp(V::sub(old_max, new_max));
      Reg sum = V::mul(V::loadu(running_sum[q]), correction);
      for (int32_t i = 0; i < hd; ++i) V::storeu(outT[q][i], V::mul(V::loadu(outT[q][i]), correction));
      V::storeu(running_max[q], new_max);
      for (jj = 0; jj < nt; ++jj) {
        const Reg e = jj >= first && jj < valid ? V::exp(V::sub(V::loadu(p[q][jj]), new_max)) : V::zero();
        sum = V::add(sum, e);
        // int8: the V row's scale goes into its weight, so the rows below can be the raw values.
        V::storeu(p[q][jj],
                  a.v_type == KvDType::kInt8 ? V::mul(e, V::set1(a.v_scale[slots[jj] * a.scale_stride])) : e);
      }
      V::storeu(running_sum[q], sum);
    }
    // outT[q][i] += p[q][jj] * v[jj][i], kStep dimensions at a time in registers across the tile's positions.
    for (int32_t jj = 0; jj < next_nt; ++jj)
      for (int64_t byte = 0; byte < v_head_bytes; byte += 64)
        __builtin_prefetch(a.v + next_slots[jj] * a.v_row_bytes + byte, 0, 2);
    const float* v_rows[kHeadsTile];
    tile_rows<V>(a.v_type, a.v, a.v_row_bytes, slots, nt, hd, kv, v_rows);
    int32_t i = 0;
    for (; i + kStep <= hd; i += kStep) {
      Reg o[kQueries][kStep];
      for (int q = 0; q < kQueries; ++q)
        for (int d = 0; d < kStep; ++d) o[q][d] = V::loadu(outT[q][i + d]);
      for (jj = 0; jj < nt; ++jj) {
        Reg vb[kStep];
        for (int d = 0; d < kStep; ++d) vb[d] = V::set1(v_rows[jj][i + d]);
        for (int q = 0; q < kQueries; ++q) {
          const Reg pq = V::loadu(p[q][jj]);
          for (int d = 0; d < kStep; ++d) o[q][d] = V::fmadd(pq, vb[d], o[q][d]);
        }
      }
      for (int q = 0; q < kQueries; ++q)
        for (int d = 0; d < kStep; ++d) V::storeu(outT[q][i + d], o[q][d]);
    }
    for (; i < hd; ++i) {
      for (int q = 0; q < kQueries; ++q) {
        Reg o = V::loadu(outT[q][i]);
        for (jj = 0; jj < nt; ++jj) o = V::fmadd(V::loadu(p[q][jj]), V::set1(v_rows[jj][i]), o);
        V::storeu(outT[q][i], o);
      }
    }
  }
  for (int q = 0; q < kQueries; ++q) {
    float* out = a.out + q * a.q_stride;
    for (int h = 0; h < nh; ++h) {
      const float sink = a.sinks != nullptr ? expf(a.sinks[h0 + h] - running_max[q][h]) : 0.0f;
      const float inv = 1.0f / (running_sum[q][h] + sink);
      for (int32_t i = 0; i < hd; ++i) out[int64_t(h0 + h) * hd + i] = outT[q][i][h] * inv;
    }
  }
}

// Every head of work item `a`, kWidth at a time, its queries up to kHeadsMaxQueries at a time. Two: two queries
// share each pass over the K and V rows, which beat one and four on a TinyLlama-shaped prefill (four queries' tiles
// no longer fit in L1 beside the K and V rows; measured: see the commit that introduced it).
inline constexpr int32_t kHeadsMaxQueries = 2;
template <class V>
void attention_heads_all(const AttentionArgs& a) {
  for (int32_t q0 = 0; q0 < a.num_queries; q0 += kHeadsMaxQueries) {
    const int32_t nq = a.num_queries - q0 < kHeadsMaxQueries ? a.num_queries - q0 : kHeadsMaxQueries;
    AttentionArgs part = a;
    part.q = a.q + q0 * a.q_stride;
    part.out = a.out + q0 * a.q_stride;
    part.num_ctx = a.num_ctx - (a.num_queries - q0 - nq);
    part.num_queries = nq;
    for (int32_t h0 = 0; h0 < a.num_q_heads; h0 += V::kWidth) {
      const int32_t nh = a.num_q_heads - h0 < V::kWidth ? a.num_q_heads - h0 : V::kWidth;
      static_assert(kHeadsMaxQueries == 2);
      if (nq == 2)
        attention_heads<V, 2>(part, h0, nh);
      else
        attention_heads<V, 1>(part, h0, nh);
    }
  }
}

}  // namespace pagoda::kernels::detail
