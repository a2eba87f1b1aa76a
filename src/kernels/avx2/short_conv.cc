// AVX2 short causal convolution (LFM2's, Qwen3.5's DeltaNet window): short_conv_impl.h over 8 lanes.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/vec_f32x8.h"
#include "kernels/short_conv_impl.h"

namespace pagoda::kernels::avx2 {

void short_conv(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                int64_t num_tokens) {
  detail::short_conv<F32x8>(taps, state, x, y, dim, num_taps, num_tokens);
}

}  // namespace pagoda::kernels::avx2
