// paged_attention_impl: the one tiled online-softmax loop behind every AttentionFn, written once and
// instantiated per instruction set with that set's vector ops (ref/attention.cc, avx2/attention.cc). Ops must
// provide scores(q, rows, scales, m, n, p) / scores_i8(q, rows8, scales, m, n, p): p[j] = (q . rows[j]) * scales[j]
// for the m rows of a tile (n values each); exp_sum(p, m, max, sum): p[j] = exp(p[j] - max) for j < m, returning
// sum plus their sum; scale(y, a, n); and weighted_rows(w, rows, m, y, n) / weighted_rows_i8(w, rows8, m, y, n):
// y[i] += w[j] * rows[j][i] for j = 0..m-1 in that order (each j as one axpy would add it, so the result is the
// same bits as m axpys).
// Include it only from those files, with Ops of internal linkage, so the instantiations never mix; it calls
// no inline library template either (std::min, std::exp), whose one shared copy could come from the AVX2 file.
#pragma once

#include <math.h>  // expf, tanhf: plain C functions, unlike std::exp's inline wrappers (see below)

#include <cstring>

#include "kernels/attention_args.h"

namespace pagoda::kernels::detail {

template <class Ops>
void paged_attention_one_query(const AttentionArgs& a) {
  constexpr int32_t kTile = 32;      // positions scored before one rescale: a stack tile, not a score row
  constexpr int32_t kMaxHeads = 16;  // query heads handled together per pass over K/V
  const int32_t hd = a.head_dim;
  const bool int8 = a.k == nullptr;
  const int32_t begin = window_begin(a.num_ctx, a.window);
  for (int32_t h0 = 0; h0 < a.num_q_heads; h0 += kMaxHeads) {
    const int32_t nh = a.num_q_heads - h0 < kMaxHeads ? a.num_q_heads - h0 : kMaxHeads;
    float running_max[kMaxHeads], running_sum[kMaxHeads];
    float p[kMaxHeads][kTile];
    for (int32_t h = 0; h < nh; ++h) {
      running_max[h] = -INFINITY;
      running_sum[h] = 0.0f;
      std::memset(a.out + int64_t(h0 + h) * hd, 0, sizeof(float) * size_t(hd));
    }
    for (int32_t j0 = begin; j0 < a.num_ctx; j0 += kTile) {
      const int32_t nt = a.num_ctx - j0 < kTile ? a.num_ctx - j0 : kTile;
      // Position j0 + jj lives in slot blocks[b] * block_size + offset, walked without a division per position.
      int64_t slots[kTile];
      int32_t b = j0 / a.block_size, offset = j0 % a.block_size;
      for (int32_t jj = 0; jj < nt; ++jj) {
        slots[jj] = int64_t(a.blocks[b]) * a.block_size + offset;
        if (++offset == a.block_size) offset = 0, ++b;
      }
      // Scores of the tile, head by head (the tile's K rows stay in L1 across the heads).
      const float* k_rows[kTile];
      const int8_t* k8_rows[kTile];
      float k_scales[kTile];
      for (int32_t jj = 0; jj < nt; ++jj) {
        if (int8) {
          k8_rows[jj] = a.k8 + slots[jj] * a.row_stride;
          k_scales[jj] = a.k_scale[slots[jj] * a.scale_stride] * a.scale;
        } else {
          k_rows[jj] = a.k + slots[jj] * a.row_stride;
          k_scales[jj] = a.scale;
        }
      }
      for (int32_t h = 0; h < nh; ++h) {
        if (int8)
          Ops::scores_i8(a.q + int64_t(h0 + h) * hd, k8_rows, k_scales, nt, hd, p[h]);
        else
          Ops::scores(a.q + int64_t(h0 + h) * hd, k_rows, k_scales, nt, hd, p[h]);
      }
      if (a.softcap > 0.0f) {
        const float inv_cap = 1.0f / a.softcap;
        for (int32_t h = 0; h < nh; ++h)
          for (int32_t jj = 0; jj < nt; ++jj) p[h][jj] = a.softcap * tanhf(p[h][jj] * inv_cap);
      }
      // Online softmax: a larger max rescales what was summed so far.
      for (int32_t h = 0; h < nh; ++h) {
        float tile_max = p[h][0];
        for (int32_t jj = 1; jj < nt; ++jj) tile_max = p[h][jj] > tile_max ? p[h][jj] : tile_max;
        const float new_max = tile_max > running_max[h] ? tile_max : running_max[h];
        if (new_max > running_max[h] && running_sum[h] > 0.0f) {
          const float correction = expf(running_max[h] - new_max);
          running_sum[h] *= correction;
          Ops::scale(a.out + int64_t(h0 + h) * hd, correction, hd);
        }
        running_max[h] = new_max;
        running_sum[h] = Ops::exp_sum(p[h], nt, new_max, running_sum[h]);
      }
      // Weighted V rows: the tile's rows into each head's output in one pass, which keeps a slice of the output in
      // registers across the tile rather than loading and storing it once per row.
      const float* v_rows[kTile];
      const int8_t* v8_rows[kTile];
      float w[kTile];
      for (int32_t jj = 0; jj < nt; ++jj) {
        if (int8)
          v8_rows[jj] = a.v8 + slots[jj] * a.row_stride;
        else
          v_rows[jj] = a.v + slots[jj] * a.row_stride;
      }
      for (int32_t h = 0; h < nh; ++h) {
        float* out = a.out + int64_t(h0 + h) * hd;
        if (int8) {
          for (int32_t jj = 0; jj < nt; ++jj) w[jj] = p[h][jj] * a.v_scale[slots[jj] * a.scale_stride];
          Ops::weighted_rows_i8(w, v8_rows, nt, out, hd);
        } else {
          Ops::weighted_rows(p[h], v_rows, nt, out, hd);
        }
      }
    }
    for (int32_t h = 0; h < nh; ++h) Ops::scale(a.out + int64_t(h0 + h) * hd, 1.0f / running_sum[h], hd);
  }
}

// Query i of a.num_queries as the single-query work item it stands for.
inline AttentionArgs one_query(const AttentionArgs& a, int32_t i) {
  AttentionArgs one = a;
  one.q = a.q + i * a.q_stride;
  one.out = a.out + i * a.q_stride;
  one.num_ctx = a.num_ctx - (a.num_queries - 1 - i);
  one.num_queries = 1;
  return one;
}

template <class Ops>
void paged_attention(const AttentionArgs& a) {
  for (int32_t i = 0; i < a.num_queries; ++i) paged_attention_one_query<Ops>(one_query(a, i));
}

}  // namespace pagoda::kernels::detail
