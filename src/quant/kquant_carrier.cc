// The re-encodings of kquant_carrier.h: the source's integers placed where the carrier's layout reads them, its
// scale copied unchanged.
#include "quant/kquant_carrier.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

bool finite_fp16(uint16_t h) { return (h & 0x7c00) != 0x7c00; }

// Q2_K with every sub-block's scale and min 1 and dmin = d.
void unit_scales(uint16_t d, BlockQ2_K& y) {
  std::memset(y.scales, 0x11, sizeof(y.scales));
  y.d = d;
  y.dmin = d;
}

// d / 2^shift as an fp16, if exact.
bool scaled_fp16(uint16_t d, int shift, uint16_t* out) {
  if (!finite_fp16(d)) return false;
  const float scaled = fp16_to_float(d) / float(1 << shift);  // exact in f32
  *out = float_to_fp16(scaled);
  return fp16_to_float(*out) == scaled && ((*out ^ d) & 0x8000) == 0;
}

// A decoded block into Q6_K's layout (block_kquants.h): q6 = q + 32 in 0..63.
bool encode_q6_K(const DecodedIquantBlock& in, BlockQ6_K& y) {
  if (!scaled_fp16(in.d, in.shift, &y.d)) return false;
  std::memcpy(y.scales, in.scales, sizeof(y.scales));
  std::memset(y.ql, 0, sizeof(y.ql));
  std::memset(y.qh, 0, sizeof(y.qh));
  for (int i = 0; i < kQK_K; ++i) {
    const int q6 = in.q[i] + 32;
    const int h = i / 128, p = (i % 128) / 32, l = i % 32;
    y.ql[64 * h + 32 * (p % 2) + l] |= uint8_t((q6 & 15) << (4 * (p / 2)));
    y.qh[32 * h + l] |= uint8_t((q6 >> 4) << (2 * p));
  }
  return true;
}

// A decoded block into Q7_K's layout (block_q7_k.h): q7 = q + 64 in 0..127.
bool encode_q7_K(const DecodedIquantBlock& in, BlockQ7_K& y) {
  if (!scaled_fp16(in.d, in.shift, &y.d)) return false;
  std::memcpy(y.scales, in.scales, sizeof(y.scales));
  for (int i = 0; i < kQK_K; ++i) y.q[i] = uint8_t(in.q[i] + kQ7Offset);
  return true;
}

bool encode(const DecodedIquantBlock& in, BlockQ6_K& y) { return encode_q6_K(in, y); }
bool encode(const DecodedIquantBlock& in, BlockQ7_K& y) { return encode_q7_K(in, y); }

template <typename Block, typename Carrier>
bool carry_iquant_row(const Block* x, Carrier* y, int64_t n, const char* type) {
  PAGODA_CHECK(n % kQK_K == 0, "{} rows hold whole super-blocks of {} values, got {}", type, kQK_K, n);
  DecodedIquantBlock decoded;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    decode_iquant_block(x[b], decoded);
    if (!encode(decoded, y[b])) return false;
  }
  return true;
}

}  // namespace

bool carry_row_as_q6_K(const BlockIQ3_XXS* x, BlockQ6_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ3_XXS"); }
bool carry_row_as_q6_K(const BlockIQ3_S* x, BlockQ6_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ3_S"); }
bool carry_row_as_q6_K(const BlockIQ1_S* x, BlockQ6_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ1_S"); }
bool carry_row_as_q6_K(const BlockIQ1_M* x, BlockQ6_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ1_M"); }
bool carry_row_as_q7_K(const BlockIQ2_XXS* x, BlockQ7_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ2_XXS"); }
bool carry_row_as_q7_K(const BlockIQ2_XS* x, BlockQ7_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ2_XS"); }
bool carry_row_as_q7_K(const BlockIQ2_S* x, BlockQ7_K* y, int64_t n) { return carry_iquant_row(x, y, n, "IQ2_S"); }

bool carry_row_as_q2_K(const BlockTQ1_0* x, BlockQ2_K* y, int64_t n) {
  PAGODA_CHECK(n % kQK_K == 0, "TQ1_0 rows hold whole super-blocks of {} values, got {}", kQK_K, n);
  uint8_t t[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    if (!finite_fp16(x[b].d)) return false;
    tq1_0_trits(x[b], t);
    unit_scales(x[b].d, y[b]);
    std::memset(y[b].qs, 0, sizeof(y[b].qs));
    for (int h = 0; h < 2; ++h)
      for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) y[b].qs[32 * h + l] |= uint8_t(t[128 * h + 32 * g + l] << (2 * g));
  }
  return true;
}

bool carry_row_as_q2_K(const BlockTQ2_0* x, BlockQ2_K* y, int64_t n) {
  PAGODA_CHECK(n % kQK_K == 0, "TQ2_0 rows hold whole super-blocks of {} values, got {}", kQK_K, n);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    if (!finite_fp16(x[b].d)) return false;
    unit_scales(x[b].d, y[b]);
    std::memcpy(y[b].qs, x[b].qs, sizeof(y[b].qs));  // the same placement (block_ternary.h)
  }
  return true;
}

bool carry_row_as_q8_0(const BlockQ5_0* x, BlockQ8_0* y, int64_t n) {
  PAGODA_CHECK(n % BlockQ5_0::kNumValues == 0, "Q5_0 rows hold whole blocks of 32 values, got {}", n);
  for (int64_t b = 0; b < n / BlockQ5_0::kNumValues; ++b) {
    const uint32_t qh = uint32_t(x[b].qh[0]) | uint32_t(x[b].qh[1]) << 8 | uint32_t(x[b].qh[2]) << 16 |
                        uint32_t(x[b].qh[3]) << 24;  // the file's byte order, whatever the host's
    y[b].d = x[b].d;
    for (int j = 0; j < 16; ++j) {
      y[b].qs[j] = int8_t(((x[b].qs[j] & 0x0f) | (((qh >> j) & 1) << 4)) - 16);
      y[b].qs[j + 16] = int8_t(((x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16);
    }
  }
  return true;
}

}  // namespace pagoda::quant
