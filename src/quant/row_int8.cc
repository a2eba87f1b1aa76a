// Reference INT8 per-row quantize/dequantize (scalar).
#include "quant/row_int8.h"

#include <cmath>

namespace pagoda::quant {

float quantize_int8_values(const float* x, int8_t* q, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::round(x[i] * id);
    // The clamp only fires for inf input or a subnormal scale whose inverse overflows.
    q[i] = std::isnan(r) ? int8_t(0) : int8_t(r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r));
  }
  return d;
}

void quantize_row_int8(const float* x, void* row, int64_t num_in) {
  int8_t* values = static_cast<int8_t*>(row) + kInt8RowHeaderBytes;
  const float scale = quantize_int8_values(x, values, num_in);
  std::memcpy(row, &scale, sizeof(scale));
}

void dequantize_rows_int8(const void* rows, float* y, int64_t num_rows, int64_t num_in) {
  const auto* bytes = static_cast<const uint8_t*>(rows);
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = bytes + r * int8_row_bytes(num_in);
    const float scale = int8_row_scale(row);
    const int8_t* q = int8_row_values(row);
    for (int64_t i = 0; i < num_in; ++i) y[r * num_in + i] = float(q[i]) * scale;
  }
}

}  // namespace pagoda::quant
