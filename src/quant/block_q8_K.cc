// Reference q8_K quantize/dequantize (scalar; ggml's quantize_row_q8_K_ref semantics).
#include "quant/block_q8_K.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace pagoda::quant {
namespace {

// ggml's nearest_int (the float-add trick: ties to even) for |v| <= 127 and any other value kept inside int8's
// range, so that inf/nan and out-of-range products stay defined.
int32_t round_to_q8_K(float v) {
  if (!(std::fabs(v) <= 128.0f)) return std::isnan(v) ? 0 : (v > 0 ? 127 : -127);
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace

void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  constexpr int64_t kQk = kQK_K;
  PAGODA_CHECK(n % kQk == 0, "q8_K rows need whole 256-value blocks, got n = {}", n);
  for (int64_t b = 0; b < n / kQk; ++b, x += kQk) {
    BlockQ8_K& out = y[b];
    float max = 0.0f, amax = 0.0f;
    for (int64_t j = 0; j < kQk; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      out.d = 0.0f;
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int64_t j = 0; j < kQk; ++j) {
      const int32_t v = round_to_q8_K(iscale * x[j]);
      out.qs[j] = int8_t(v < 127 ? v : 127);
    }
    for (int64_t k = 0; k < kQk / 16; ++k) {
      int32_t sum = 0;
      for (int64_t i = 0; i < 16; ++i) sum += out.qs[16 * k + i];
      out.bsums[k] = int16_t(sum);
    }
    out.d = 1.0f / iscale;
  }
}

}  // namespace pagoda::quant
