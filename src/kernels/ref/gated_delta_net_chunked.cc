// Scalar reference of gated DeltaNet's chunked form (kernels.h's gated_delta_net_chunked): each chunk's decays,
// triangular solve, outputs and carried state written out as plain sums, in the order kernels.h states them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void gated_delta_net_chunked(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                             const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                             int32_t head_dim, int64_t num_tokens, float scale) {
  PAGODA_CHECK(head_dim > 0 && head_dim <= kMaxDeltaNetHeadDim);
  const int64_t d = head_dim, c = kDeltaNetChunk;
  const auto cc = static_cast<size_t>(c * c), cd = static_cast<size_t>(c * d);
  std::vector<float> cum(static_cast<size_t>(c)), a(cc), t_inv(cc), w(cd), u(cd);
  const auto dot = [d](const float* x, const float* y) {
    float sum = 0.0f;
    for (int64_t i = 0; i < d; ++i) sum += x[i] * y[i];
    return sum;
  };
  for (int64_t first = 0; first < num_tokens; first += c) {
    const int64_t n = std::min(c, num_tokens - first);
    const auto row = [&](const float* base, int64_t t) { return base + (first + t) * qkv_stride; };
    const auto gate = [&](const float* base, int64_t t) { return base[(first + t) * gate_stride]; };
    float sum = 0.0f;
    for (int64_t t = 0; t < n; ++t) cum[size_t(t)] = sum += gate(g, t);
    // A, strictly lower, and T = (I + A)^-1, lower with a unit diagonal: row t = e_t - sum_{s < t} A[t][s] T[s].
    for (int64_t t = 0; t < n; ++t)
      for (int64_t s = 0; s < t; ++s)
        a[size_t(t * c + s)] = gate(beta, t) * std::exp(cum[size_t(t)] - cum[size_t(s)]) * dot(row(k, t), row(k, s));
    for (int64_t t = 0; t < n; ++t) {
      float* tt = t_inv.data() + t * c;
      std::fill(tt, tt + c, 0.0f);
      tt[t] = 1.0f;
      for (int64_t s = 0; s < t; ++s)
        for (int64_t r = 0; r <= s; ++r) tt[r] -= a[size_t(t * c + s)] * t_inv[size_t(s * c + r)];
    }
    // W = T beta exp(G) K, U = T beta V - W S0 (S0[i][j] = state[j * d + i]).
    for (int64_t t = 0; t < n; ++t) {
      float* wt = w.data() + t * d;
      float* ut = u.data() + t * d;
      std::fill(wt, wt + d, 0.0f);
      std::fill(ut, ut + d, 0.0f);
      for (int64_t s = 0; s <= t; ++s) {
        const float ts = t_inv[size_t(t * c + s)] * gate(beta, s);
        const float tk = ts * std::exp(cum[size_t(s)]);
        for (int64_t i = 0; i < d; ++i) wt[i] += tk * row(k, s)[i];
        for (int64_t j = 0; j < d; ++j) ut[j] += ts * row(v, s)[j];
      }
      for (int64_t j = 0; j < d; ++j) ut[j] -= dot(wt, state + j * d);
    }
    for (int64_t t = 0; t < n; ++t) {
      float* ot = out + (first + t) * out_stride;
      float* p = a.data() + t * c;  // row t of A is no longer read: P[t][s] = exp(G[t] - G[s]) q[t].k[s]
      for (int64_t s = 0; s <= t; ++s) p[s] = std::exp(cum[size_t(t)] - cum[size_t(s)]) * dot(row(q, t), row(k, s));
      for (int64_t j = 0; j < d; ++j) {
        float o = std::exp(cum[size_t(t)]) * dot(row(q, t), state + j * d);
        for (int64_t s = 0; s <= t; ++s) o += p[s] * u[size_t(s * d + j)];
        ot[j] = o * scale;
      }
    }
    const float last = cum[size_t(n - 1)];
    for (int64_t j = 0; j < d; ++j)
      for (int64_t i = 0; i < d; ++i) {
        float s_ij = std::exp(last) * state[j * d + i];
        for (int64_t s = 0; s < n; ++s) s_ij += std::exp(last - cum[size_t(s)]) * row(k, s)[i] * u[size_t(s * d + j)];
        state[j * d + i] = s_ij;
      }
  }
}

}  // namespace pagoda::kernels::ref
