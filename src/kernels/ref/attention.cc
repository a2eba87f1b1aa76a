// Scalar paged attention: the shared online-softmax loop over plain loops.
#include "kernels/paged_attention_impl.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {
namespace {

struct RefOps {
  static float dot(const float* q, const float* k, int32_t n) {
    float s = 0.0f;
    for (int32_t i = 0; i < n; ++i) s += q[i] * k[i];
    return s;
  }
  static float dot_i8(const float* q, const int8_t* k, int32_t n) {
    float s = 0.0f;
    for (int32_t i = 0; i < n; ++i) s += q[i] * float(k[i]);
    return s;
  }
  static void axpy(float a, const float* x, float* y, int32_t n) {
    for (int32_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
  static void axpy_i8(float a, const int8_t* x, float* y, int32_t n) {
    for (int32_t i = 0; i < n; ++i) y[i] += a * float(x[i]);
  }
  static void scale(float* y, float a, int32_t n) {
    for (int32_t i = 0; i < n; ++i) y[i] *= a;
  }
};

}  // namespace

void paged_attention(const AttentionArgs& args) { detail::paged_attention<RefOps>(args); }

}  // namespace pagoda::kernels::ref
