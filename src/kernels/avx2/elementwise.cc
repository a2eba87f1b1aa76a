// AVX2/FMA vector ops: rmsnorm, dot, axpy, silu_mul, gelu_mul, swiglu_oai_mul, softmax, the shared templates of
// vector_ops_impl.h over 8 lanes.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/vec_f32x8.h"
#include "kernels/vector_ops_impl.h"

namespace pagoda::kernels::avx2 {

float dot(const float* a, const float* b, int64_t n) { return detail::dot<F32x8>(a, b, n); }
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  detail::rmsnorm<F32x8>(x, weight, y, n, eps);
}
void axpy(float a, const float* x, float* y, int64_t n) { detail::axpy<F32x8>(a, x, y, n); }
void silu_mul(float* gate, const float* up, int64_t n) { detail::silu_mul<F32x8>(gate, up, n); }
void gelu_mul(float* gate, const float* up, int64_t n) { detail::gelu_mul<F32x8>(gate, up, n); }
void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  detail::swiglu_oai_mul<F32x8>(gate, up, n, alpha, limit);
}
void softmax(const float* x, float* y, int64_t n) { detail::softmax<F32x8>(x, y, n); }

}  // namespace pagoda::kernels::avx2
