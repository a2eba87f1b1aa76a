// Scalar reference RoPE (kernels.h's rope): each pair rotated with both products rounded, compiled with
// -ffp-contract=off so that no build contracts them into an fma (the SIMD versions give these bits).
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void rope(const float* in, float* out, int32_t num_heads, int32_t head_dim, int32_t half_rope, const float* cs,
          const float* sn, bool neox) {
  const int32_t stride = neox ? 1 : 2, partner = neox ? half_rope : 1;
  for (int32_t h = 0; h < num_heads; ++h) {
    const float* src = in + int64_t(h) * head_dim;
    float* dst = out + int64_t(h) * head_dim;
    for (int32_t i = 0; i < half_rope; ++i) {
      const int32_t j = i * stride;
      const float a = src[j], b = src[j + partner];
      dst[j] = a * cs[i] - b * sn[i];
      dst[j + partner] = a * sn[i] + b * cs[i];
    }
    for (int32_t i = 2 * half_rope; i < head_dim; ++i) dst[i] = src[i];
  }
}

}  // namespace pagoda::kernels::ref
