// Reference dequantization of IQ4_NL, IQ4_XS and MXFP4 blocks (scalar; the test oracle for any faster path),
// with ggml's f32 operations in ggml's order so the floats are the same bits.
#include "quant/block_iq4_mxfp4.h"

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
// The factor 1/2 of the doubled E2M1 values moves into the scale, so every product is one exact integer times a
// power of two, as in ggml.
float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  return bits_to_float(bits);
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n) {
  constexpr int64_t kQk = BlockIQ4_NL::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "IQ4_NL rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b, y += kQk) {
    const float d = fp16_to_float(x[b].d);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[j] = d * float(kIq4NlLevels[x[b].qs[j] & 0x0f]);
      y[j + kQk / 2] = d * float(kIq4NlLevels[x[b].qs[j] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n) {
  constexpr int64_t kQk = BlockIQ4_XS::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "IQ4_XS rows hold whole super-blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int s = 0; s < 8; ++s, y += 32) {
      const int ls = ((x[b].scales_l[s / 2] >> (4 * (s % 2))) & 0x0f) | (((x[b].scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * float(ls - 32);
      const uint8_t* qs = x[b].qs + 16 * s;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(kIq4NlLevels[qs[j] & 0x0f]);
        y[j + 16] = dl * float(kIq4NlLevels[qs[j] >> 4]);
      }
    }
  }
}

void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n) {
  constexpr int64_t kQk = BlockMXFP4::kNumValues;
  PAGODA_CHECK(n % kQk == 0, "MXFP4 rows hold whole blocks of {} values, got {}", kQk, n);
  for (int64_t b = 0; b < n / kQk; ++b, y += kQk) {
    const float d = mxfp4_half_scale(x[b].e);
    for (int64_t j = 0; j < kQk / 2; ++j) {
      y[j] = float(kE2M1Doubled[x[b].qs[j] & 0x0f]) * d;
      y[j + kQk / 2] = float(kE2M1Doubled[x[b].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace pagoda::quant
