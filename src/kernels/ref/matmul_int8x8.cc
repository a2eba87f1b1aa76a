// Scalar reference for INT8x8 weights (quant/row_int8x8.h): the plain W8A8 arithmetic (exact int32 sum, then
// float(sum) * (w_scale * x_scale)) read through the interleaved layout, so it gives matmul_int8_int8's bits.
#include "core/check.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::ref {

void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int8_t* x = xq + t * num_in;
    for (int64_t o = 0; o < num_out; ++o) {
      const void* group = static_cast<const uint8_t*>(w) + (o / 8) * quant::int8x8_group_bytes(num_in);
      const int8_t* q = quant::int8x8_values(group);
      const int64_t r = o % 8;
      int32_t sumi = 0;
      for (int64_t i = 0; i < num_in; ++i) sumi += int32_t(q[32 * (i / 4) + 4 * r + i % 4]) * int32_t(x[i]);
      y[t * y_stride + o] = float(sumi) * (quant::int8x8_scales(group)[r] * x_scales[t]);
    }
  }
}

void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(quant::quantize_int8_values, x, num_in, num_tokens);
  matmul_int8x8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::ref
