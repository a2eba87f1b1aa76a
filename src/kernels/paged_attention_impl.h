// paged_attention_impl: the tiled online-softmax loop behind the keys-in-lanes AttentionFns (query by query, or a
// block of consecutive queries over copied K/V tiles; both through one per-tile step), written once and
// instantiated per instruction set with that set's vector ops (ref/, avx2/ and avx512/attention.cc). Ops must
// provide scores(type, q, rows, scales, m, n, p): p[j] = (q . rows[j]) * scales[j] for the m rows of a tile (n values
// each, of KvDType `type`, an int8 row's values unscaled), each row's values converted as the dot product loads them;
// exp_sum(p, m, max, sum): p[j] = exp(p[j] - max) for j < m, returning sum plus their sum; scale(y, a, n); and
// weighted_rows(type, w, rows, m, y, n): y[i] += w[j] * rows[j][i] for j = 0..m-1 in that order (each j as one axpy
// would add it, so the result is the same bits as m axpys).
// Include it only from those files, with Ops of internal linkage, so the instantiations never mix; it calls
// no inline library template either (std::min, std::exp), whose one shared copy could come from the AVX2 file.
#pragma once

#include <math.h>  // expf, tanhf: plain C functions, unlike std::exp's inline wrappers (see below)

#include <cstring>

#include "kernels/attention_args.h"

namespace pagoda::kernels::detail {

// Query i of a.num_queries as the single-query work item it stands for.
inline AttentionArgs one_query(const AttentionArgs& a, int32_t i) {
  AttentionArgs one = a;
  one.q = a.q + i * a.q_stride;
  one.out = a.out + i * a.q_stride;
  one.num_ctx = a.num_ctx - (a.num_queries - 1 - i);
  one.num_queries = 1;
  return one;
}

inline constexpr int32_t kTile = 32;      // positions scored before one rescale: a stack tile, not a score row
inline constexpr int32_t kMaxHeads = 16;  // query heads handled together per pass over K/V

// The online-softmax step of one tile's scores p[h][0..nt) of nh heads (their outputs at out + h * head_dim): the soft
// cap, then per head the tile's max, a larger max rescaling what was summed so far, and p turned into the weights
// exp(p - max) that the V rows take. Every loop below runs a tile's scores through this one step.
template <class Ops>
inline void tile_softmax(const AttentionArgs& a, float* out, int32_t nh, int32_t nt, float* running_max,
                         float* running_sum, float (*p)[kTile]) {
  const int32_t hd = a.head_dim;
  if (a.softcap > 0.0f) {
    const float inv_cap = 1.0f / a.softcap;
    for (int32_t h = 0; h < nh; ++h)
      for (int32_t jj = 0; jj < nt; ++jj) p[h][jj] = a.softcap * tanhf(p[h][jj] * inv_cap);
  }
  for (int32_t h = 0; h < nh; ++h) {
    float tile_max = p[h][0];
    for (int32_t jj = 1; jj < nt; ++jj) tile_max = p[h][jj] > tile_max ? p[h][jj] : tile_max;
    const float new_max = tile_max > running_max[h] ? tile_max : running_max[h];
    if (new_max > running_max[h] && running_sum[h] > 0.0f) {
      const float correction = expf(running_max[h] - new_max);
      running_sum[h] *= correction;
      Ops::scale(out + int64_t(h) * hd, correction, hd);
    }
    running_max[h] = new_max;
    running_sum[h] = Ops::exp_sum(p[h], nt, new_max, running_sum[h]);
  }
}

// One query's heads over one tile of nt positions: their scores against the tile's K rows, the online-softmax
// update (a larger max rescales what was summed so far), and the weighted V rows into their outputs. Both loops
// below run a query through this same code, so a query's bits never depend on the loop or its neighbours.
template <class Ops>
inline void attend_tile(const AttentionArgs& a, const float* q, float* out, int32_t nh, int32_t nt,
                        const uint8_t* const* k_rows, const float* k_scales, const uint8_t* const* v_rows,
                        const float* v_scales, float* running_max, float* running_sum, float (*p)[kTile]) {
  const int32_t hd = a.head_dim;
  for (int32_t h = 0; h < nh; ++h) Ops::scores(a.k_type, q + int64_t(h) * hd, k_rows, k_scales, nt, hd, p[h]);
  tile_softmax<Ops>(a, out, nh, nt, running_max, running_sum, p);
  // The tile's rows into each head's output in one pass, which keeps a slice of the output in registers across
  // the tile rather than loading and storing it once per row. An int8 V row's scale goes into its weight.
  float w[kTile];
  for (int32_t h = 0; h < nh; ++h) {
    if (a.v_type == KvDType::kInt8) {
      for (int32_t jj = 0; jj < nt; ++jj) w[jj] = p[h][jj] * v_scales[jj];
      Ops::weighted_rows(a.v_type, w, v_rows, nt, out + int64_t(h) * hd, hd);
    } else {
      Ops::weighted_rows(a.v_type, p[h], v_rows, nt, out + int64_t(h) * hd, hd);
    }
  }
}

// The slots of positions j0..j0+nt-1: position j lives in blocks[j / block_size] * block_size + j % block_size,
// walked without a division per position.
inline void tile_slots(const AttentionArgs& a, int32_t j0, int32_t nt, int64_t* slots) {
  int32_t b = j0 / a.block_size, offset = j0 % a.block_size;
  for (int32_t jj = 0; jj < nt; ++jj) {
    slots[jj] = int64_t(a.blocks[b]) * a.block_size + offset;
    if (++offset == a.block_size) offset = 0, ++b;
  }
}

// The K scales of a tile's slots (the attention scale, times an int8 K row's own) and the V scales (an int8 V row's;
// unused for the other types).
inline void tile_scales(const AttentionArgs& a, const int64_t* slots, int32_t nt, float* k_scales, float* v_scales) {
  for (int32_t jj = 0; jj < nt; ++jj) {
    k_scales[jj] = a.k_type == KvDType::kInt8 ? a.k_scale[slots[jj] * a.scale_stride] * a.scale : a.scale;
    v_scales[jj] = a.v_type == KvDType::kInt8 ? a.v_scale[slots[jj] * a.scale_stride] : 1.0f;
  }
}

// A tile's K and V row pointers with their scales (tile_scales), for the loops that hand a tile to attend_tile.
inline void tile_rows(const AttentionArgs& a, const int64_t* slots, int32_t nt, const uint8_t** k_rows,
                      const uint8_t** v_rows, float* k_scales, float* v_scales) {
  tile_scales(a, slots, nt, k_scales, v_scales);
  for (int32_t jj = 0; jj < nt; ++jj) {
    k_rows[jj] = a.k + slots[jj] * a.k_row_bytes;
    v_rows[jj] = a.v + slots[jj] * a.v_row_bytes;
  }
}

// A head's softmax denominator with its sink (AttentionArgs::sinks) added, relative to the head's running max. A
// template of Ops only to keep each level's copy apart.
template <class Ops>
inline float with_sink(const AttentionArgs& a, int32_t head, float running_max, float running_sum) {
  return a.sinks != nullptr ? running_sum + expf(a.sinks[head] - running_max) : running_sum;
}

template <class Ops>
void paged_attention_one_query(const AttentionArgs& a) {
  const int32_t hd = a.head_dim;
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
      int64_t slots[kTile];
      tile_slots(a, j0, nt, slots);
      const uint8_t* k_rows[kTile];
      const uint8_t* v_rows[kTile];
      float k_scales[kTile], v_scales[kTile];
      tile_rows(a, slots, nt, k_rows, v_rows, k_scales, v_scales);
      attend_tile<Ops>(a, a.q + int64_t(h0) * hd, a.out + int64_t(h0) * hd, nh, nt, k_rows, k_scales, v_rows,
                       v_scales, running_max, running_sum, p);
    }
    for (int32_t h = 0; h < nh; ++h)
      Ops::scale(a.out + int64_t(h0 + h) * hd, 1.0f / with_sink<Ops>(a, h0 + h, running_max[h], running_sum[h]), hd);
  }
}

// Several consecutive queries of a work item together (no window: every query's tiles start at position 0, so
// they share them). A KV head's rows lie a whole cache row (kv_dim values) apart, a power-of-two stride that maps
// them onto a few cache sets: read query by query, a tile's rows came from L3 each time. Here each tile's K and V
// rows are copied once into contiguous buffers and every query of the block is run over the copies: the same
// values through attend_tile, so each query gets the one-query loop's bits.
inline constexpr int32_t kBlockMaxHeadDim = 256;
inline constexpr int32_t kBlockMaxStates = 32;  // queries x heads of one block

template <class Ops>
void paged_attention_query_block(const AttentionArgs& a, int32_t i0, int32_t nq) {
  const int32_t hd = a.head_dim, nh = a.num_q_heads;
  // One head's row in each side's type (at most hd f32 values).
  const int64_t k_head_bytes = kv_row_bytes(a.k_type, hd), v_head_bytes = kv_row_bytes(a.v_type, hd);
  alignas(64) uint8_t k_copy[kTile * kBlockMaxHeadDim * sizeof(float)];
  alignas(64) uint8_t v_copy[kTile * kBlockMaxHeadDim * sizeof(float)];
  float running_max[kBlockMaxStates], running_sum[kBlockMaxStates];
  float p[kBlockMaxStates][kTile];
  int32_t ctx[kBlockMaxStates];
  for (int32_t qi = 0; qi < nq; ++qi) {
    const AttentionArgs one = one_query(a, i0 + qi);
    ctx[qi] = one.num_ctx;
    for (int32_t h = 0; h < nh; ++h) {
      running_max[qi * nh + h] = -INFINITY;
      running_sum[qi * nh + h] = 0.0f;
    }
    std::memset(one.out, 0, sizeof(float) * size_t(nh) * size_t(hd));
  }
  const int32_t last_ctx = ctx[nq - 1];
  for (int32_t j0 = 0; j0 < last_ctx; j0 += kTile) {
    const int32_t nt = last_ctx - j0 < kTile ? last_ctx - j0 : kTile;
    int64_t slots[kTile];
    tile_slots(a, j0, nt, slots);
    float k_scales[kTile], v_scales[kTile];
    tile_scales(a, slots, nt, k_scales, v_scales);
    const uint8_t* k_rows[kTile];
    const uint8_t* v_rows[kTile];
    for (int32_t jj = 0; jj < nt; ++jj) {
      uint8_t* kc = k_copy + int64_t(jj) * k_head_bytes;
      uint8_t* vc = v_copy + int64_t(jj) * v_head_bytes;
      std::memcpy(kc, a.k + slots[jj] * a.k_row_bytes, size_t(k_head_bytes));
      std::memcpy(vc, a.v + slots[jj] * a.v_row_bytes, size_t(v_head_bytes));
      k_rows[jj] = kc;
      v_rows[jj] = vc;
    }
    for (int32_t qi = 0; qi < nq; ++qi) {
      if (ctx[qi] <= j0) continue;  // this query's context ended in an earlier tile
      const int32_t nt_q = ctx[qi] - j0 < nt ? ctx[qi] - j0 : nt;
      const AttentionArgs one = one_query(a, i0 + qi);
      attend_tile<Ops>(a, one.q, one.out, nh, nt_q, k_rows, k_scales, v_rows, v_scales, running_max + qi * nh,
                       running_sum + qi * nh, p + qi * nh);
    }
  }
  for (int32_t qi = 0; qi < nq; ++qi) {
    const AttentionArgs one = one_query(a, i0 + qi);
    for (int32_t h = 0; h < nh; ++h)
      Ops::scale(one.out + int64_t(h) * hd,
                 1.0f / with_sink<Ops>(a, h, running_max[qi * nh + h], running_sum[qi * nh + h]), hd);
  }
}

// One query over several KV heads of a cache row (AttentionArgs::num_kv_heads), tile by tile: each tile's positions
// for every head before the next tile, so a tile's rows are read in address order (each position's share of the row
// is one contiguous run), the first tile's prefetched whole and each later tile's head by head as the tile before it is
// computed (prefetch_rows). Per head and per chunk of kMaxHeads query heads, the same tiles go through attend_tile
// as in paged_attention_one_query, with the same state: each head gets the bits of its own item.
inline constexpr int32_t kTogetherMaxStates = 64;  // query heads walked together; more are split into several walks

// The K and V runs (k_bytes, v_bytes from each row's start) of the given slots towards the caches, one request a
// cache line. The walk below asks for a head's rows of the next tile (one_kv_head's view) as it computes the head's
// rows of this one, so the requests go out spread over the tile's work, as many per head as the head reads, rather
// than a whole tile's in one burst; the first tile goes out whole (prefetch_tile).
inline void prefetch_rows(const AttentionArgs& a, const int64_t* slots, int32_t nt, int64_t k_bytes, int64_t v_bytes) {
  for (int32_t jj = 0; jj < nt; ++jj) {
    const uint8_t* k = a.k + slots[jj] * a.k_row_bytes;
    const uint8_t* v = a.v + slots[jj] * a.v_row_bytes;
    for (int64_t b = 0; b < k_bytes; b += 64) __builtin_prefetch(k + b, 0, 2);
    for (int64_t b = 0; b < v_bytes; b += 64) __builtin_prefetch(v + b, 0, 2);
  }
}

// The tile at j0's K and V runs (k_bytes, v_bytes of every row) towards the caches.
inline void prefetch_tile(const AttentionArgs& a, int32_t j0, int32_t nt, int64_t k_bytes, int64_t v_bytes) {
  int64_t slots[kTile];
  tile_slots(a, j0, nt, slots);
  prefetch_rows(a, slots, nt, k_bytes, v_bytes);
}

template <class Ops>
void paged_attention_heads_together(const AttentionArgs& a) {
  const int32_t hd = a.head_dim, group = a.num_q_heads, nkv = a.num_kv_heads;
  const int32_t total = nkv * group;
  const int64_t k_head_bytes = kv_row_bytes(a.k_type, hd), v_head_bytes = kv_row_bytes(a.v_type, hd);
  const int32_t begin = window_begin(a.num_ctx, a.window);
  float running_max[kTogetherMaxStates], running_sum[kTogetherMaxStates];
  float p[kMaxHeads][kTile];
  for (int32_t h = 0; h < total; ++h) running_max[h] = -INFINITY, running_sum[h] = 0.0f;
  std::memset(a.out, 0, sizeof(float) * size_t(total) * size_t(hd));
  prefetch_tile(a, begin, a.num_ctx - begin < kTile ? a.num_ctx - begin : kTile, nkv * k_head_bytes,
                nkv * v_head_bytes);
  for (int32_t j0 = begin; j0 < a.num_ctx; j0 += kTile) {
    const int32_t nt = a.num_ctx - j0 < kTile ? a.num_ctx - j0 : kTile;
    const int32_t next = j0 + kTile;
    const int32_t next_nt = next >= a.num_ctx ? 0 : a.num_ctx - next < kTile ? a.num_ctx - next : kTile;
    int64_t slots[kTile], next_slots[kTile];
    tile_slots(a, j0, nt, slots);
    if (next_nt > 0) tile_slots(a, next, next_nt, next_slots);
    for (int32_t g = 0; g < nkv; ++g) {
      const AttentionArgs one = one_kv_head<Ops>(a, g);
      prefetch_rows(one, next_slots, next_nt, k_head_bytes, v_head_bytes);
      const uint8_t* k_rows[kTile];
      const uint8_t* v_rows[kTile];
      float k_scales[kTile], v_scales[kTile];
      tile_rows(one, slots, nt, k_rows, v_rows, k_scales, v_scales);
      for (int32_t h0 = 0; h0 < group; h0 += kMaxHeads) {
        const int32_t nh = group - h0 < kMaxHeads ? group - h0 : kMaxHeads;
        const int32_t state = g * group + h0;
        attend_tile<Ops>(a, one.q + int64_t(h0) * hd, one.out + int64_t(h0) * hd, nh, nt, k_rows, k_scales, v_rows,
                         v_scales, running_max + state, running_sum + state, p);
      }
    }
  }
  for (int32_t g = 0; g < nkv; ++g) {
    const AttentionArgs one = one_kv_head<Ops>(a, g);
    for (int32_t h = 0; h < group; ++h)
      Ops::scale(one.out + int64_t(h) * hd,
                 1.0f / with_sink<Ops>(one, h, running_max[g * group + h], running_sum[g * group + h]), hd);
  }
}

// One query over several KV heads of a cache row (as paged_attention_heads_together) with the rows read in address
// order: each tile's K rows position by position, every query head's score of a position from the position's share
// of the row read front to back, then the V rows the same way; the next tile's rows (ahead, nullptr past the context)
// are requested share by share as the same share of this tile is computed, so the requests go out spread over the
// work and in the order the rows are read. An Ops that has scores_in_order(type, q, n, m, group, rows, head_bytes, nt,
// p, ahead) and weighted_in_order(type, w, rows, head_bytes, m, group, nt, y, n, ahead) takes this walk: query head s
// < m (of KV head s / group, its row share at rows[jj] + (s / group) * head_bytes, its query at q + s * n) gets p[s][jj]
// = its unscaled score, summed as Ops::scores sums a key, for jj < nt in that order; then y[s][i] += w[s][jj] *
// share[i] for jj = 0..nt-1 in that order, as weighted_rows adds them. The scores are scaled and go through
// tile_softmax as in attend_tile, so each head gets the bits of its own item.
template <class Ops>
concept OrderedRowOps = requires { &Ops::scores_in_order; &Ops::weighted_in_order; };

template <class Ops>
void paged_attention_in_address_order(const AttentionArgs& a) {
  const int32_t hd = a.head_dim, group = a.num_q_heads, total = a.num_kv_heads * group;
  const int64_t k_head_bytes = kv_row_bytes(a.k_type, hd), v_head_bytes = kv_row_bytes(a.v_type, hd);
  const int32_t begin = window_begin(a.num_ctx, a.window);
  float running_max[kTogetherMaxStates], running_sum[kTogetherMaxStates];
  alignas(64) float p[kTogetherMaxStates][kTile];
  for (int32_t s = 0; s < total; ++s) running_max[s] = -INFINITY, running_sum[s] = 0.0f;
  std::memset(a.out, 0, sizeof(float) * size_t(total) * size_t(hd));
  for (int32_t j0 = begin; j0 < a.num_ctx; j0 += kTile) {
    const int32_t nt = a.num_ctx - j0 < kTile ? a.num_ctx - j0 : kTile;
    int64_t slots[kTile], next_slots[kTile];
    tile_slots(a, j0, nt, slots);
    const int32_t next = j0 + kTile;
    const int32_t next_nt = next >= a.num_ctx ? 0 : a.num_ctx - next < kTile ? a.num_ctx - next : kTile;
    if (next_nt > 0) tile_slots(a, next, next_nt, next_slots);
    const uint8_t* rows[kTile];
    const uint8_t* ahead[kTile];
    for (int32_t jj = 0; jj < nt; ++jj) rows[jj] = a.k + slots[jj] * a.k_row_bytes;
    for (int32_t jj = 0; jj < nt; ++jj) ahead[jj] = jj < next_nt ? a.k + next_slots[jj] * a.k_row_bytes : nullptr;
    Ops::scores_in_order(a.k_type, a.q, hd, total, group, rows, k_head_bytes, nt, p, ahead);
    // The scale of each score, as tile_scales gives it: an int8 K row's own scale is its KV head's.
    for (int32_t s = 0; s < total; ++s)
      for (int32_t jj = 0; jj < nt; ++jj)
        p[s][jj] *=
            a.k_type == KvDType::kInt8 ? a.k_scale[slots[jj] * a.scale_stride + s / group] * a.scale : a.scale;
    tile_softmax<Ops>(a, a.out, total, nt, running_max, running_sum, p);
    if (a.v_type == KvDType::kInt8)
      for (int32_t s = 0; s < total; ++s)
        for (int32_t jj = 0; jj < nt; ++jj) p[s][jj] *= a.v_scale[slots[jj] * a.scale_stride + s / group];
    for (int32_t jj = 0; jj < nt; ++jj) rows[jj] = a.v + slots[jj] * a.v_row_bytes;
    for (int32_t jj = 0; jj < nt; ++jj) ahead[jj] = jj < next_nt ? a.v + next_slots[jj] * a.v_row_bytes : nullptr;
    Ops::weighted_in_order(a.v_type, p, rows, v_head_bytes, total, group, nt, a.out, hd, ahead);
  }
  for (int32_t s = 0; s < total; ++s)
    Ops::scale(a.out + int64_t(s) * hd, 1.0f / with_sink<Ops>(a, s, running_max[s], running_sum[s]), hd);
}

// An item of one KV head, by the loops above.
template <class Ops>
void paged_attention_one_kv_head(const AttentionArgs& a) {
  const int32_t per_block = a.num_q_heads <= kBlockMaxStates ? kBlockMaxStates / a.num_q_heads : 0;
  if (a.num_queries == 1 || a.window > 0 || per_block < 2 || a.head_dim > kBlockMaxHeadDim) {
    for (int32_t i = 0; i < a.num_queries; ++i) paged_attention_one_query<Ops>(one_query(a, i));
    return;
  }
  for (int32_t i = 0; i < a.num_queries; i += per_block)
    paged_attention_query_block<Ops>(a, i, a.num_queries - i < per_block ? a.num_queries - i : per_block);
}

// Any item: several KV heads of one query walked together (in walks of at most kTogetherMaxStates query heads),
// several queries KV head by KV head.
template <class Ops>
void paged_attention(const AttentionArgs& a) {
  if (a.num_kv_heads == 1) return paged_attention_one_kv_head<Ops>(a);
  if (a.num_queries == 1 && a.num_q_heads <= kTogetherMaxStates) {
    const int32_t per_walk = kTogetherMaxStates / a.num_q_heads;
    for (int32_t g0 = 0; g0 < a.num_kv_heads; g0 += per_walk) {
      AttentionArgs walk = one_kv_head<Ops>(a, g0);
      walk.num_kv_heads = a.num_kv_heads - g0 < per_walk ? a.num_kv_heads - g0 : per_walk;
      if constexpr (OrderedRowOps<Ops>)
        paged_attention_in_address_order<Ops>(walk);
      else
        paged_attention_heads_together<Ops>(walk);
    }
    return;
  }
  for (int32_t g = 0; g < a.num_kv_heads; ++g) paged_attention_one_kv_head<Ops>(one_kv_head<Ops>(a, g));
}

}  // namespace pagoda::kernels::detail
