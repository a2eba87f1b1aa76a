// INT8 KV row quantization.
#include "quant/kv_int8.h"

#include <cmath>

namespace pagoda {

float quantize_kv_int8(const float* x, int32_t n, int8_t* q) {
  float amax = 0.0f;
  for (int32_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float scale = amax / 127.0f;
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(x[i] * inv);
    q[i] = int8_t(r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r));
  }
  return scale;
}

void dequantize_kv_int8(const int8_t* q, float scale, int32_t n, float* x) {
  for (int32_t i = 0; i < n; ++i) x[i] = float(q[i]) * scale;
}

}  // namespace pagoda
