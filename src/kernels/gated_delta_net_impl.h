// gated_delta_net_impl: kernels.h's gated_delta_net written once over a vector type V and instantiated per
// instruction set (avx2/gated_delta_net.cc with 8 f32 lanes, avx512/'s with 16). V provides kWidth, Reg, loadu,
// storeu, set1, zero, mul, fmadd and hsum. Each state row (one value's column of S) is decayed, dotted with k, updated
// and dotted with q in one pass over its kWidth-lane pieces while it is in registers' reach; a tail of fewer lanes runs
// as scalar code. Include it only from those files, with a V of internal linkage, so the instantiations never mix.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pagoda::kernels::detail {

// exp(g) through the builtin (libm's expf, as the reference's std::exp), never an inline wrapper that another
// instruction set's copy could replace.
template <class V>
inline void gated_delta_net(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                            const float* g, const float* beta, int64_t gate_stride, float* out,
                            int64_t out_stride, int32_t head_dim, int64_t num_tokens, float scale) {
  const int64_t d = head_dim;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* qt = q + t * qkv_stride;
    const float* kt = k + t * qkv_stride;
    const float vb = beta[t * gate_stride];
    const float decay_value = __builtin_expf(g[t * gate_stride]);
    const typename V::Reg decay = V::set1(decay_value);
    float* ot = out + t * out_stride;
    for (int64_t j = 0; j < d; ++j) {
      float* row = state + j * d;
      // Decay the row and take its dot with k in one pass.
      typename V::Reg acc = V::zero();
      int64_t i = 0;
      for (; i + V::kWidth <= d; i += V::kWidth) {
        const typename V::Reg r = V::mul(V::loadu(row + i), decay);
        V::storeu(row + i, r);
        acc = V::fmadd(r, V::loadu(kt + i), acc);
      }
      float sk = V::hsum(acc);
      for (; i < d; ++i) {
        row[i] *= decay_value;
        sk += row[i] * kt[i];
      }
      const float delta = (v[t * qkv_stride + j] - sk) * vb;
      // The rank-one update and the row's dot with q in a second pass.
      const typename V::Reg vd = V::set1(delta);
      typename V::Reg accq = V::zero();
      i = 0;
      for (; i + V::kWidth <= d; i += V::kWidth) {
        const typename V::Reg r = V::fmadd(V::loadu(kt + i), vd, V::loadu(row + i));
        V::storeu(row + i, r);
        accq = V::fmadd(r, V::loadu(qt + i), accq);
      }
      float sq = V::hsum(accq);
      for (; i < d; ++i) {
        row[i] += kt[i] * delta;
        sq += row[i] * qt[i];
      }
      ot[j] = sq * scale;
    }
  }
}

}  // namespace pagoda::kernels::detail
