// gated_delta_net_chunked_impl: kernels.h's gated_delta_net_chunked written once over a vector type V and the
// instruction set's f32 matmul (MatmulFn: y[t][o] = w[o] . x[t]), instantiated per instruction set
// (avx2/gated_delta_net.cc, avx512/'s). The chunk's products (K K^T, Q K^T, T times the scaled K and V, the state
// times W and Q, P U, the state's update) are matmul calls over contiguous copies; the decays, the triangular solve
// and the element-wise steps are V loops. Scratch is a grow-only thread_local buffer. Include it only from those
// files, with a V of internal linkage, so the instantiations never mix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace pagoda::kernels::detail {

// Row r of a [rows][stride] matrix transposed into column r of a [cols][ld] one: dst[i * ld + r] = src[r * stride + i].
inline void transpose_into(const float* src, int64_t stride, int64_t rows, int64_t cols, float* dst, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) dst[i * ld + r] = src[r * stride + i];
}

// row[s] = exp(cum[t] - cum[s]) * row[s] for s <= t and 0 after, over the whole [0, kDeltaNetChunk) row.
template <class V>
inline void decay_row(float* row, const float* cum, int64_t t) {
  constexpr int64_t c = kDeltaNetChunk;
  static_assert(c % V::kWidth == 0);
  const typename V::Reg ct = V::set1(cum[t]);
  int64_t s = 0;
  for (; s <= t; s += V::kWidth) V::storeu(row + s, V::mul(V::exp(V::sub(ct, V::loadu(cum + s))), V::loadu(row + s)));
  for (int64_t r = t + 1; r < s; ++r) row[r] = 0.0f;
  for (; s < c; s += V::kWidth) V::storeu(row + s, V::zero());
}

template <class V>
void gated_delta_net_chunked(MatmulFn matmul, float* state, const float* q, const float* k, const float* v,
                             int64_t qkv_stride, const float* g, const float* beta, int64_t gate_stride, float* out,
                             int64_t out_stride, int32_t head_dim, int64_t num_tokens, float scale) {
  constexpr int64_t c = kDeltaNetChunk;
  const int64_t d = head_dim;
  // Per thread: cum [c], the [c][c] matrices kk, p, t_inv, the [c][d] ones wq (W then Q: 2c rows), u, sq (S0^T W
  // then S0^T Q: 2c rows), pu, the [d][c] ones bk_t, bv_t, u_t, kd_t, and the [d][d] update.
  static thread_local std::vector<float> scratch;
  const size_t need = size_t(c + 3 * c * c + 6 * c * d + 4 * d * c + d * d);
  if (scratch.size() < need) scratch.resize(need);
  float* cum = scratch.data();
  float* kk = cum + c;
  float* p = kk + c * c;
  float* t_inv = p + c * c;
  float* wq = t_inv + c * c;
  float* u = wq + 2 * c * d;
  float* sq = u + c * d;
  float* pu = sq + 2 * c * d;
  float* bk_t = pu + c * d;
  float* bv_t = bk_t + d * c;
  float* u_t = bv_t + d * c;
  float* kd_t = u_t + d * c;
  float* update = kd_t + d * c;
  for (int64_t first = 0; first < num_tokens; first += c) {
    const int64_t n = std::min(c, num_tokens - first);
    float* w = wq;
    float* qc = wq + n * d;  // Q right after W, so one product gives S0^T of both
    float* kc = pu;          // K's rows live in pu until P U overwrites them
    float sum = 0.0f;
    for (int64_t t = 0; t < n; ++t) cum[t] = sum += g[(first + t) * gate_stride];
    for (int64_t t = n; t < c; ++t) cum[t] = sum;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t at = (first + t) * qkv_stride;
      std::copy(k + at, k + at + d, kc + t * d);
      std::copy(q + at, q + at + d, qc + t * d);
    }
    matmul(kc, kc, kk, n, d, n);  // kk[t][s] = k[s] . k[t]
    matmul(kc, qc, p, n, d, n);   // p[t][s] = k[s] . q[t]
    if (n < c)
      for (int64_t t = 0; t < n; ++t) {
        // matmul wrote rows of n: spread them to rows of c, last first, so none overwrites one not yet moved.
        const int64_t r = n - 1 - t;
        std::copy_backward(kk + r * n, kk + r * n + n, kk + r * c + n);
        std::copy_backward(p + r * n, p + r * n + n, p + r * c + n);
      }
    // A = beta[t] * decay * kk below the diagonal (in kk); T's rows by forward substitution.
    for (int64_t t = 0; t < n; ++t) {
      float* at = kk + t * c;
      decay_row<V>(at, cum, t);
      const float b = beta[(first + t) * gate_stride];
      for (int64_t s = 0; s < t; ++s) at[s] *= b;
      decay_row<V>(p + t * c, cum, t);
      float* tt = t_inv + t * c;
      const int64_t len = (t + V::kWidth) / V::kWidth * V::kWidth;  // covers [0, t], within c
      for (int64_t r = 0; r < len; r += V::kWidth) {
        typename V::Reg acc = V::zero();
        for (int64_t s = 0; s < t; ++s) acc = V::fmadd(V::set1(-at[s]), V::loadu(t_inv + s * c + r), acc);
        V::storeu(tt + r, acc);
      }
      tt[t] = 1.0f;
      std::fill(tt + len, tt + c, 0.0f);
    }
    // bk_t[i][s] = beta[s] exp(G[s]) k[s][i], bv_t[j][s] = beta[s] v[s][j]: [d][n], rows of n.
    for (int64_t s = 0; s < n; ++s) {
      const float b = beta[(first + s) * gate_stride];
      const float bk = b * __builtin_expf(cum[s]);
      const float* ks = kc + s * d;
      const float* vs = v + (first + s) * qkv_stride;
      for (int64_t i = 0; i < d; ++i) {
        bk_t[i * n + s] = bk * ks[i];
        bv_t[i * n + s] = b * vs[i];
      }
    }
    // T's rows cut to n columns (in place: row t's first n values moved up to t * n).
    for (int64_t t = 1; t < n; ++t) std::copy(t_inv + t * c, t_inv + t * c + n, t_inv + t * n);
    matmul(bk_t, t_inv, w, d, n, n);     // W[t][i] = sum_s T[t][s] bk_t[i][s]
    matmul(bv_t, t_inv, u, d, n, n);     // U'[t][j]
    matmul(state, wq, sq, d, d, 2 * n);  // sq[t][j] = S0[:, j] . W[t]; sq[n + t][j] = S0[:, j] . q[t]
    // K's decayed transposed copy for the update, before pu takes kc's place.
    const float last = cum[n - 1];
    for (int64_t s = 0; s < n; ++s) {
      const float decay = __builtin_expf(last - cum[s]);
      for (int64_t i = 0; i < d; ++i) kd_t[i * n + s] = decay * kc[s * d + i];
    }
    for (int64_t t = 0; t < n; ++t) {
      float* ut = u + t * d;
      const float* st = sq + t * d;
      int64_t j = 0;
      for (; j + V::kWidth <= d; j += V::kWidth) V::storeu(ut + j, V::sub(V::loadu(ut + j), V::loadu(st + j)));
      for (; j < d; ++j) ut[j] -= st[j];
    }
    transpose_into(u, d, n, d, u_t, n);
    for (int64_t t = 1; t < n; ++t) std::copy(p + t * c, p + t * c + n, p + t * n);
    matmul(u_t, p, pu, d, n, n);  // pu[t][j] = sum_s P[t][s] U[s][j]
    for (int64_t t = 0; t < n; ++t) {
      const typename V::Reg e = V::set1(__builtin_expf(cum[t])), sc = V::set1(scale);
      const float* qs = sq + (n + t) * d;
      const float* pt = pu + t * d;
      float* ot = out + (first + t) * out_stride;
      int64_t j = 0;
      for (; j + V::kWidth <= d; j += V::kWidth)
        V::storeu(ot + j, V::mul(V::fmadd(e, V::loadu(qs + j), V::loadu(pt + j)), sc));
      for (; j < d; ++j) ot[j] = (__builtin_expf(cum[t]) * qs[j] + pt[j]) * scale;
    }
    matmul(kd_t, u_t, update, d, n, d);  // update[j][i] = sum_s kd_t[i][s] U[s][j]
    const float decay_value = __builtin_expf(last);
    const typename V::Reg decay = V::set1(decay_value);
    int64_t i = 0;
    for (; i + V::kWidth <= d * d; i += V::kWidth)
      V::storeu(state + i, V::fmadd(decay, V::loadu(state + i), V::loadu(update + i)));
    for (; i < d * d; ++i) state[i] = decay_value * state[i] + update[i];
  }
}

}  // namespace pagoda::kernels::detail
