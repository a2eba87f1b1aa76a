// Scalar reference vector ops: rmsnorm, dot, axpy, softmax, silu_mul, swiglu_oai_mul.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum_sq / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void softmax(const float* x, float* y, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (y[i] = std::exp(x[i] - max));
  const float inv_sum = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv_sum;
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], limit);
    const float y = std::clamp(up[i], -limit, limit);
    gate[i] = x / (1.0f + std::exp(-alpha * x)) * (y + 1.0f);
  }
}

}  // namespace pagoda::kernels::ref
