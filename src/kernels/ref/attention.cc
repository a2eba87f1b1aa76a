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
  static void weighted_rows(const float* w, const float* const* rows, int32_t m, float* y, int32_t n) {
    for (int32_t j = 0; j < m; ++j)
      for (int32_t i = 0; i < n; ++i) y[i] += w[j] * rows[j][i];
  }
  static void weighted_rows_i8(const float* w, const int8_t* const* rows, int32_t m, float* y, int32_t n) {
    for (int32_t j = 0; j < m; ++j)
      for (int32_t i = 0; i < n; ++i) y[i] += w[j] * float(rows[j][i]);
  }
  static void scale(float* y, float a, int32_t n) {
    for (int32_t i = 0; i < n; ++i) y[i] *= a;
  }
};

}  // namespace

void paged_attention(const AttentionArgs& args) { detail::paged_attention<RefOps>(args); }

}  // namespace pagoda::kernels::ref
