// attention_heads_impl: paged attention with the query heads of a work item in the lanes of a vector (up to kWidth
// heads of one KV head, the grouped-query case), written once over a vector type V and instantiated per
// instruction set (avx2/attention.cc). Each K row then feeds every head with one broadcast per value, the scores
// come out as vectors over the heads with no horizontal sums, and the online softmax and the weighted V rows run on
// whole vectors: the same flash-style pass as paged_attention_impl.h, in another order (results within f32 rounding
// of it). V provides kWidth, Reg, loadu, storeu, set1, zero, add, sub, mul, max, exp and widen_i8 (dst[0..kWidth) =
// float(src[0..kWidth))). Include it only from the
// ISA folders, with a V of internal linkage.
#pragma once

#include <cstdint>

#include "kernels/attention_args.h"

namespace pagoda::kernels::detail {

inline constexpr int32_t kHeadsTile = 32;         // positions per tile, as paged_attention_impl.h
inline constexpr int32_t kHeadsMaxHeadDim = 256;  // larger heads take the other kernel

template <class V>
inline void widen_row(const int8_t* src, float* dst, int32_t n) {
  int32_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::widen_i8(src + i, dst + i);
  for (; i < n; ++i) dst[i] = float(src[i]);
}

// Heads h0 .. h0 + nh - 1 (nh <= V::kWidth) of work item `a`.
template <class V>
void attention_heads(const AttentionArgs& a, int32_t h0, int32_t nh) {
  using Reg = typename V::Reg;
  constexpr int W = V::kWidth;
  const int32_t hd = a.head_dim;
  const bool int8 = a.k == nullptr;
  // qT[i][h] = q[h0 + h][i] * scale (the score scale folded in), zero lanes past nh; outT likewise transposed.
  alignas(64) float qT[kHeadsMaxHeadDim][W];
  alignas(64) float outT[kHeadsMaxHeadDim][W];
  for (int32_t i = 0; i < hd; ++i)
    for (int h = 0; h < W; ++h) {
      qT[i][h] = h < nh ? a.q[int64_t(h0 + h) * hd + i] * a.scale : 0.0f;
      outT[i][h] = 0.0f;
    }
  Reg running_max = V::set1(-3.0e38f), running_sum = V::zero();
  alignas(64) float p[kHeadsTile][W];                  // scores, then probabilities, of the tile's positions per head
  alignas(64) float kv[kHeadsTile][kHeadsMaxHeadDim];  // int8 caches: the tile's K (then V) rows widened to f32
  for (int32_t j0 = 0; j0 < a.num_ctx; j0 += kHeadsTile) {
    const int32_t nt = a.num_ctx - j0 < kHeadsTile ? a.num_ctx - j0 : kHeadsTile;
    int64_t slots[kHeadsTile];
    int32_t b = j0 / a.block_size, offset = j0 % a.block_size;
    for (int32_t jj = 0; jj < nt; ++jj) {
      slots[jj] = int64_t(a.blocks[b]) * a.block_size + offset;
      if (++offset == a.block_size) offset = 0, ++b;
    }
    // The tile's K rows as f32 (int8 widened once here, not once per head).
    const float* k_rows[kHeadsTile];
    for (int32_t jj = 0; jj < nt; ++jj) {
      if (int8) {
        widen_row<V>(a.k8 + slots[jj] * a.row_stride, kv[jj], hd);
        k_rows[jj] = kv[jj];
      } else {
        k_rows[jj] = a.k + slots[jj] * a.row_stride;
      }
    }
    // Scores, four positions at a time: p[jj] = sum_i qT[i] * k[jj][i] (times the row's int8 scale).
    int32_t jj = 0;
    for (; jj + 4 <= nt; jj += 4) {
      Reg s0 = V::zero(), s1 = V::zero(), s2 = V::zero(), s3 = V::zero();
      for (int32_t i = 0; i < hd; ++i) {
        const Reg q = V::loadu(qT[i]);
        s0 = V::fmadd(q, V::set1(k_rows[jj][i]), s0);
        s1 = V::fmadd(q, V::set1(k_rows[jj + 1][i]), s1);
        s2 = V::fmadd(q, V::set1(k_rows[jj + 2][i]), s2);
        s3 = V::fmadd(q, V::set1(k_rows[jj + 3][i]), s3);
      }
      V::storeu(p[jj], s0);
      V::storeu(p[jj + 1], s1);
      V::storeu(p[jj + 2], s2);
      V::storeu(p[jj + 3], s3);
    }
    for (; jj < nt; ++jj) {
      Reg s = V::zero();
      for (int32_t i = 0; i < hd; ++i) s = V::fmadd(V::loadu(qT[i]), V::set1(k_rows[jj][i]), s);
      V::storeu(p[jj], s);
    }
    if (int8)
      for (jj = 0; jj < nt; ++jj)
        V::storeu(p[jj], V::mul(V::loadu(p[jj]), V::set1(a.k_scale[slots[jj] * a.scale_stride])));
    // Online softmax per lane: a larger max rescales what was summed so far (by exactly 1 where it did not grow).
    Reg tile_max = V::loadu(p[0]);
    for (jj = 1; jj < nt; ++jj) tile_max = V::max(tile_max, V::loadu(p[jj]));
    const Reg new_max = V::max(running_max, tile_max);
    const Reg correction = V::exp(V::sub(running_max, new_max));
    running_sum = V::mul(running_sum, correction);
    for (int32_t i = 0; i < hd; ++i) V::storeu(outT[i], V::mul(V::loadu(outT[i]), correction));
    running_max = new_max;
    for (jj = 0; jj < nt; ++jj) {
      const Reg e = V::exp(V::sub(V::loadu(p[jj]), new_max));
      running_sum = V::add(running_sum, e);
      // int8: the V row's scale goes into its weight, so the rows below can be the raw values.
      V::storeu(p[jj], int8 ? V::mul(e, V::set1(a.v_scale[slots[jj] * a.scale_stride])) : e);
    }
    // outT[i] += p[jj] * v[jj][i], eight dimensions in registers across the tile's positions.
    const float* v_rows[kHeadsTile];
    for (jj = 0; jj < nt; ++jj) {
      if (int8) {
        widen_row<V>(a.v8 + slots[jj] * a.row_stride, kv[jj], hd);
        v_rows[jj] = kv[jj];
      } else {
        v_rows[jj] = a.v + slots[jj] * a.row_stride;
      }
    }
    int32_t i = 0;
    for (; i + 8 <= hd; i += 8) {
      Reg o[8];
      for (int k = 0; k < 8; ++k) o[k] = V::loadu(outT[i + k]);
      for (jj = 0; jj < nt; ++jj) {
        const Reg pj = V::loadu(p[jj]);
        for (int k = 0; k < 8; ++k) o[k] = V::fmadd(pj, V::set1(v_rows[jj][i + k]), o[k]);
      }
      for (int k = 0; k < 8; ++k) V::storeu(outT[i + k], o[k]);
    }
    for (; i < hd; ++i) {
      Reg o = V::loadu(outT[i]);
      for (jj = 0; jj < nt; ++jj) o = V::fmadd(V::loadu(p[jj]), V::set1(v_rows[jj][i]), o);
      V::storeu(outT[i], o);
    }
  }
  alignas(64) float sum[W];
  V::storeu(sum, running_sum);
  for (int h = 0; h < nh; ++h) {
    const float inv = 1.0f / sum[h];
    for (int32_t i = 0; i < hd; ++i) a.out[int64_t(h0 + h) * hd + i] = outT[i][h] * inv;
  }
}

}  // namespace pagoda::kernels::detail
