// AVX2 gated DeltaNet recurrence and its chunked form: gated_delta_net_impl.h and
// gated_delta_net_chunked_impl.h (with this level's f32 matmul) over 8 lanes.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/vec_f32x8.h"
#include "kernels/gated_delta_net_chunked_impl.h"
#include "kernels/gated_delta_net_impl.h"

namespace pagoda::kernels::avx2 {

void gated_delta_net(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride, const float* g,
                     const float* beta, int64_t gate_stride, float* out, int64_t out_stride, int32_t head_dim,
                     int64_t num_tokens, float scale) {
  detail::gated_delta_net<F32x8>(state, q, k, v, qkv_stride, g, beta, gate_stride, out, out_stride, head_dim,
                                 num_tokens, scale);
}

void gated_delta_net_chunked(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                             const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                             int32_t head_dim, int64_t num_tokens, float scale) {
  detail::gated_delta_net_chunked<F32x8>(matmul_f32, state, q, k, v, qkv_stride, g, beta, gate_stride, out, out_stride,
                                         head_dim, num_tokens, scale);
}

}  // namespace pagoda::kernels::avx2
