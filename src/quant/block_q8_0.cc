// Reference Q8_0 quantize/dequantize (scalar; ggml's quantize_row_q8_0_ref semantics).
#include "quant/block_q8_0.h"

#include <cmath>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

// roundf(v) saturated to [-127, 127]. For finite input the clamp never fires (|x / d| <= 127 up to a few ulps);
// it only keeps the float -> int8 conversion defined for inf/nan and for scales that underflow to subnormals.
int8_t round_to_q8(float v) {
  const float r = std::round(v);
  if (r >= 127.0f) return 127;
  if (r <= -127.0f) return -127;
  if (std::isnan(r)) return 0;
  return static_cast<int8_t>(r);
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  constexpr int64_t kQk = BlockQ8_0::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "Q8_0 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float* xb = x + b * kQk;
    float amax = 0.0f;
    for (int64_t j = 0; j < kQk; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    // ggml rounds with the f32 scale and stores the fp16 one; matching that order is what makes us byte-exact.
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_fp16(d);
    for (int64_t j = 0; j < kQk; ++j) y[b].qs[j] = round_to_q8(xb[j] * id);
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  constexpr int64_t kQk = BlockQ8_0::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "Q8_0 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int64_t j = 0; j < kQk; ++j) y[b * kQk + j] = float(x[b].qs[j]) * d;
  }
}

}  // namespace pagoda::quant
