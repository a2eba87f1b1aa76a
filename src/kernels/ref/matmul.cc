// Scalar reference matmul for f32, f16 and bf16 weights (f32 activations, f32 accumulation in index order).
#include <cstdint>

#include "core/half.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {
namespace {
template <class LoadFn>
void matmul_any(LoadFn load, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t o = 0; o < num_out; ++o) {
      float sum = 0.0f;
      for (int64_t i = 0; i < num_in; ++i) sum += load(o * num_in + i) * x[t * num_in + i];
      y[t * num_out + o] = sum;
    }
  }
}
}  // namespace

void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const float* wf = static_cast<const float*>(w);
  matmul_any([wf](int64_t k) { return wf[k]; }, x, y, num_out, num_in, num_tokens);
}

void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  matmul_any([wh](int64_t k) { return fp16_to_float(wh[k]); }, x, y, num_out, num_in, num_tokens);
}

void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  matmul_any([wh](int64_t k) { return bf16_to_float(wh[k]); }, x, y, num_out, num_in, num_tokens);
}
}  // namespace pagoda::kernels::ref
