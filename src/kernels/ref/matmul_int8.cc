// Scalar reference W8A8 matmul: INT8 per-channel weight rows against per-token INT8 activations. The dot
// product is an exact int32 sum, scaled once per (row, token).
#include "core/check.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8.h"

namespace pagoda::kernels::ref {

void matmul_int8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride) {
  check_int8_row_length(num_in);
  const auto* rows = static_cast<const uint8_t*>(w);
  const int64_t row_bytes = quant::int8_row_bytes(num_in);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int8_t* x = xq + t * num_in;
    for (int64_t o = 0; o < num_out; ++o) {
      const uint8_t* row = rows + o * row_bytes;
      const int8_t* q = quant::int8_row_values(row);
      int32_t sumi = 0;
      for (int64_t i = 0; i < num_in; ++i) sumi += int32_t(q[i]) * int32_t(x[i]);
      y[t * y_stride + o] = float(sumi) * (quant::int8_row_scale(row) * x_scales[t]);
    }
  }
}

void matmul_int8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(quant::quantize_int8_values, x, num_in, num_tokens);
  matmul_int8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::ref
