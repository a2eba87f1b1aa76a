// Scalar reference of the short causal convolution (kernels.h's short_conv): LFM2's conv layers.
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void short_conv(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                int64_t num_tokens) {
  const int32_t num_kept = num_taps - 1;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t c = 0; c < dim; ++c) {
      const float newest = x[t * dim + c];
      float sum = 0.0f;
      for (int32_t k = 0; k < num_kept; ++k) sum += state[k * dim + c] * taps[k * dim + c];
      sum += newest * taps[int64_t(num_kept) * dim + c];
      for (int32_t k = 0; k + 1 < num_kept; ++k) state[k * dim + c] = state[(k + 1) * dim + c];
      if (num_kept > 0) state[int64_t(num_kept - 1) * dim + c] = newest;
      y[t * dim + c] = sum;
    }
  }
}

}  // namespace pagoda::kernels::ref
