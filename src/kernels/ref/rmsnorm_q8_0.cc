// Scalar reference of RMSNorm fused with the Q8_0 activation quantization: one block of normalized values at a
// time through a stack buffer, with ref::rmsnorm's arithmetic and quant::quantize_row_q8_0's rounding, so the
// bytes equal those two run one after the other.
#include <cmath>

#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void rmsnorm_q8_0(const float* x, const float* weight, quant::BlockQ8_0* y, int64_t n, float eps) {
  check_quant_row_length(n);
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum_sq / float(n) + eps);
  constexpr int64_t kQk = quant::BlockQ8_0::kNumValues;
  float normed[kQk];
  for (int64_t b = 0; b < n / kQk; ++b) {
    for (int64_t j = 0; j < kQk; ++j) normed[j] = x[b * kQk + j] * scale * weight[b * kQk + j];
    quant::quantize_row_q8_0(normed, y + b, kQk);
  }
}

}  // namespace pagoda::kernels::ref
