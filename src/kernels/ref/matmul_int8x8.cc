// Scalar reference for INT8x8 and INT8x16 weights (quant/row_int8x8.h): the plain W8A8 arithmetic (exact int32 sum,
// then float(sum) * (w_scale * x_scale)) read through the interleaved layout, so it gives matmul_int8_int8's bits.
#include "core/check.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::ref {
namespace {

template <int64_t kRows>
void matmul_rows_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in, kRows);
  const int64_t group_bytes = kRows * quant::int8_row_bytes(num_in);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int8_t* x = xq + t * num_in;
    for (int64_t o = 0; o < num_out; ++o) {
      const auto* group = static_cast<const uint8_t*>(w) + (o / kRows) * group_bytes;
      const auto* q = reinterpret_cast<const int8_t*>(group + kRows * quant::kInt8RowHeaderBytes);
      const int64_t r = o % kRows;
      int32_t sumi = 0;
      for (int64_t i = 0; i < num_in; ++i) sumi += int32_t(q[4 * kRows * (i / 4) + 4 * r + i % 4]) * int32_t(x[i]);
      y[t * y_stride + o] = float(sumi) * (reinterpret_cast<const float*>(group)[r] * x_scales[t]);
    }
  }
}

}  // namespace

void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  matmul_rows_int8<quant::kInt8x8Rows>(w, xq, x_scales, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_int8x16_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                         int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  matmul_rows_int8<quant::kInt8x16Rows>(w, xq, x_scales, y, num_out, num_in, num_tokens, y_stride);
}

void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(quant::quantize_int8_values, x, num_in, num_tokens);
  matmul_int8x8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}
void matmul_int8x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(quant::quantize_int8_values, x, num_in, num_tokens);
  matmul_int8x16_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::ref
