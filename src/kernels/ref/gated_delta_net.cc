// Scalar reference of gated DeltaNet's recurrence (kernels.h's gated_delta_net): Qwen3.5's linear-attention heads.
#include <cmath>

#include "core/check.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void gated_delta_net(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                     const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                     int32_t head_dim, int64_t num_tokens, float scale) {
  PAGODA_CHECK(head_dim > 0 && head_dim <= kMaxDeltaNetHeadDim);
  const int64_t d = head_dim;
  float delta[kMaxDeltaNetHeadDim];
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* qt = q + t * qkv_stride;
    const float* kt = k + t * qkv_stride;
    const float* vt = v + t * qkv_stride;
    const float decay = std::exp(g[t * gate_stride]);
    const float b = beta[t * gate_stride];
    for (int64_t i = 0; i < d * d; ++i) state[i] *= decay;
    // Row j of the state is value j's column of S: delta[j] = (v[j] - S[:, j] . k) * beta.
    for (int64_t j = 0; j < d; ++j) {
      const float* row = state + j * d;
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += row[i] * kt[i];
      delta[j] = (vt[j] - sum) * b;
    }
    for (int64_t j = 0; j < d; ++j) {
      float* row = state + j * d;
      for (int64_t i = 0; i < d; ++i) row[i] += kt[i] * delta[j];
    }
    float* ot = out + t * out_stride;
    for (int64_t j = 0; j < d; ++j) {
      const float* row = state + j * d;
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += row[i] * qt[i];
      ot[j] = sum * scale;
    }
  }
}

}  // namespace pagoda::kernels::ref
