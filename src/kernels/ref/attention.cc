// Scalar paged attention: the shared online-softmax loop over plain loops.
#include <math.h>

#include "kernels/paged_attention_impl.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {
namespace {

struct RefOps {
  template <class T>
  static void scores_with(const float* q, const T* const* rows, const float* scales, int32_t m, int32_t n, float* p) {
    for (int32_t j = 0; j < m; ++j) {
      float s = 0.0f;
      for (int32_t i = 0; i < n; ++i) s += q[i] * float(rows[j][i]);
      p[j] = s * scales[j];
    }
  }
  static void scores(const float* q, const float* const* rows, const float* scales, int32_t m, int32_t n, float* p) {
    scores_with(q, rows, scales, m, n, p);
  }
  static void scores_i8(const float* q, const int8_t* const* rows, const float* scales, int32_t m, int32_t n,
                        float* p) {
    scores_with(q, rows, scales, m, n, p);
  }
  static float exp_sum(float* p, int32_t m, float max, float sum) {
    for (int32_t j = 0; j < m; ++j) {
      p[j] = expf(p[j] - max);
      sum += p[j];
    }
    return sum;
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
