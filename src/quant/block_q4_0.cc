// Reference Q4_0 quantize/dequantize (scalar; ggml's quantize_row_q4_0_ref semantics).
#include "quant/block_q4_0.h"

#include <cmath>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

// v = x / d + 8.5 -> nibble. ggml writes MIN(15, (int8_t)v); for every v a finite block produces (0.5 <= v <=
// 16.5 up to rounding) truncation below and the 15 cap above give the same nibble. The explicit bounds keep the
// conversion defined when v is out of range or nan (inf/nan input, or a subnormal scale whose inverse is inf).
uint8_t to_nibble(float v) {
  if (v >= 15.0f) return 15;
  if (v > 0.0f) return static_cast<uint8_t>(static_cast<int>(v));
  return 0;
}

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  constexpr int64_t kQk = BlockQ4_0::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "Q4_0 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float* xb = x + b * kQk;
    // The signed value of largest magnitude (first one wins a tie) maps to -8, the end of the range that has
    // no positive twin; the opposite sign is then clipped at 7, which costs at most one step.
    float amax = 0.0f;
    float max = 0.0f;
    for (int64_t j = 0; j < kQk; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_fp16(d);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      const uint8_t lo = to_nibble(xb[j] * id + 8.5f);
      const uint8_t hi = to_nibble(xb[j + kQk / 2] * id + 8.5f);
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  constexpr int64_t kQk = BlockQ4_0::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "Q4_0 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[b * kQk + j] = float((x[b].qs[j] & 0x0f) - 8) * d;
      y[b * kQk + j + kQk / 2] = float((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

}  // namespace pagoda::quant
