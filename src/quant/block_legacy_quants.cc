// Reference dequantization of ggml's Q4_1, Q5_0 and Q5_1 blocks (scalar; the test oracle for any faster path).
// The arithmetic is ggml's, operation for operation, so the floats are the same bits.
#include "quant/block_legacy_quants.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kQk = 32;

// Element j's fifth bit (0 or 16): bit j of the block's little-endian u32.
int fifth_bit(uint32_t qh, int64_t j) { return int((qh >> j) & 1u) << 4; }

uint32_t load_qh(const uint8_t* qh) {
  // Little-endian assembly by hand: the file's byte order, whatever the host's.
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

}  // namespace

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQk == 0, "Q4_1 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b, y += kQk) {
    const float d = fp16_to_float(x[b].d);
    const float m = fp16_to_float(x[b].m);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[j] = float(x[b].qs[j] & 0x0f) * d + m;
      y[j + kQk / 2] = float(x[b].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQk == 0, "Q5_0 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b, y += kQk) {
    const float d = fp16_to_float(x[b].d);
    const uint32_t qh = load_qh(x[b].qh);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[j] = float(((x[b].qs[j] & 0x0f) | fifth_bit(qh, j)) - 16) * d;
      y[j + kQk / 2] = float(((x[b].qs[j] >> 4) | fifth_bit(qh, j + kQk / 2)) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQk == 0, "Q5_1 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b, y += kQk) {
    const float d = fp16_to_float(x[b].d);
    const float m = fp16_to_float(x[b].m);
    const uint32_t qh = load_qh(x[b].qh);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[j] = float((x[b].qs[j] & 0x0f) | fifth_bit(qh, j)) * d + m;
      y[j + kQk / 2] = float((x[b].qs[j] >> 4) | fifth_bit(qh, j + kQk / 2)) * d + m;
    }
  }
}

}  // namespace pagoda::quant
