// Reference AWQ INT4 group quantize/dequantize (scalar).
#include "quant/block_awq_int4.h"

#include <cmath>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

// round(v) (half away from zero) + offset, clamped to [0, 15]; nan -> 0.
int32_t to_nibble(float v, int32_t offset) {
  const float r = std::round(v) + float(offset);
  if (!(r >= 0.0f)) return 0;  // also nan
  if (r >= 15.0f) return 15;
  return int32_t(r);
}

}  // namespace

template <int64_t kGroup>
void quantize_row_awq_int4(const float* x, BlockAwqInt4<kGroup>* y, int64_t n) {
  PAGODA_CHECK(n % kGroup == 0, "AWQ INT4 rows hold whole groups of {} values, got {}", kGroup, n);
  for (int64_t g = 0; g < n / kGroup; ++g) {
    const float* xg = x + g * kGroup;
    float lo = 0.0f, hi = 0.0f;
    for (int64_t j = 0; j < kGroup; ++j) {
      lo = std::fmin(lo, xg[j]);
      hi = std::fmax(hi, xg[j]);
    }
    const uint16_t d16 = float_to_fp16((hi - lo) / 15.0f);
    const float d = fp16_to_float(d16);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int32_t zero = to_nibble(-lo * id, 0);
    BlockAwqInt4<kGroup>& b = y[g];
    b.d = d16;
    b.zero = uint8_t(zero);
    b.reserved = 0;
    for (int64_t k = 0; k < BlockAwqInt4<kGroup>::kNumSubBlocks; ++k) {
      for (int64_t j = 0; j < 16; ++j) {
        const int32_t q_lo = to_nibble(xg[32 * k + j] * id, zero);
        const int32_t q_hi = to_nibble(xg[32 * k + 16 + j] * id, zero);
        b.qs[16 * k + j] = uint8_t(q_lo | (q_hi << 4));
      }
    }
  }
}

template <int64_t kGroup>
void dequantize_row_awq_int4(const BlockAwqInt4<kGroup>* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kGroup == 0, "AWQ INT4 rows hold whole groups of {} values, got {}", kGroup, n);
  for (int64_t g = 0; g < n / kGroup; ++g) {
    const BlockAwqInt4<kGroup>& b = x[g];
    const float d = fp16_to_float(b.d);
    const int32_t zero = b.zero;
    float* yg = y + g * kGroup;
    for (int64_t k = 0; k < BlockAwqInt4<kGroup>::kNumSubBlocks; ++k) {
      for (int64_t j = 0; j < 16; ++j) {
        yg[32 * k + j] = float(int32_t(b.qs[16 * k + j] & 0x0f) - zero) * d;
        yg[32 * k + 16 + j] = float(int32_t(b.qs[16 * k + j] >> 4) - zero) * d;
      }
    }
  }
}

template void quantize_row_awq_int4<32>(const float*, BlockAwqInt4<32>*, int64_t);
template void quantize_row_awq_int4<64>(const float*, BlockAwqInt4<64>*, int64_t);
template void quantize_row_awq_int4<128>(const float*, BlockAwqInt4<128>*, int64_t);
template void dequantize_row_awq_int4<32>(const BlockAwqInt4<32>*, float*, int64_t);
template void dequantize_row_awq_int4<64>(const BlockAwqInt4<64>*, float*, int64_t);
template void dequantize_row_awq_int4<128>(const BlockAwqInt4<128>*, float*, int64_t);

void quantize_row_awq_int4(const float* x, void* y, int64_t n, int64_t group) {
  switch (group) {
    case 32: quantize_row_awq_int4<32>(x, static_cast<BlockAwqInt4G32*>(y), n); return;
    case 64: quantize_row_awq_int4<64>(x, static_cast<BlockAwqInt4G64*>(y), n); return;
    case 128: quantize_row_awq_int4<128>(x, static_cast<BlockAwqInt4G128*>(y), n); return;
  }
  PAGODA_CHECK(false, "AWQ INT4 group size must be 32, 64 or 128, got {}", group);
}

void dequantize_row_awq_int4(const void* x, float* y, int64_t n, int64_t group) {
  switch (group) {
    case 32: dequantize_row_awq_int4<32>(static_cast<const BlockAwqInt4G32*>(x), y, n); return;
    case 64: dequantize_row_awq_int4<64>(static_cast<const BlockAwqInt4G64*>(x), y, n); return;
    case 128: dequantize_row_awq_int4<128>(static_cast<const BlockAwqInt4G128*>(x), y, n); return;
  }
  PAGODA_CHECK(false, "AWQ INT4 group size must be 32, 64 or 128, got {}", group);
}

int64_t awq_int4_row_bytes(int64_t n, int64_t group) { return n / group * (4 + group / 2); }

}  // namespace pagoda::quant
