// ggml's IQ4_NL/IQ4_XS quantizer: one routine over a super-block of `super` values in blocks of 32 (IQ4_NL: one
// block, its scale the fp16 d itself; IQ4_XS: eight, with 6-bit scales), each block's scale searched over 15
// candidates around the one that maps its largest magnitude to the codebook's end.
#include "quant/iq4_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/quant_search.h"

namespace pagoda::quant {
namespace {

constexpr float kZeroEps = 1e-15f;  // a block whose largest magnitude is below this is all zero
constexpr int kTries = 7;           // scale candidates either side of the first
constexpr int kBlock = 32;

// The index of the codebook level nearest to x (the lower one on a tie), by bisection over the sorted levels.
int nearest_level(float x) {
  const int8_t* v = kIq4NlLevels;
  if (x <= float(v[0])) return 0;
  if (x >= float(v[15])) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < float(v[mid]))
      hi = mid;
    else
      lo = mid;
  }
  return x - float(v[hi - 1]) < float(v[hi]) - x ? hi - 1 : hi;
}

struct SuperBlockOut {
  uint16_t* d;
  uint8_t* qs;             // super / 2 bytes
  uint16_t* scales_h;      // IQ4_XS only
  uint8_t* scales_l;       // IQ4_XS only
};

void quantize_super_block(int super, const float* x, const float* importance, SuperBlockOut out) {
  float weight[kBlock];
  float scales[kQK_K / kBlock];
  uint8_t L[kQK_K];
  float sigma2 = 0;
  for (int j = 0; j < super; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / float(super);
  std::memset(out.qs, 0, size_t(super / 2));
  *out.d = float_to_fp16(0.f);
  const float first = float(kIq4NlLevels[0]);
  float max_scale = 0, amax_scale = 0;
  const int num_blocks = super / kBlock;
  for (int ib = 0; ib < num_blocks; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    if (importance != nullptr) {
      const float* qw = importance + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    } else {
      for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    }
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kZeroEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / first;
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const int l = nearest_level(id * xb[j]);
      Lb[j] = uint8_t(l);
      const float q = float(kIq4NlLevels[l]);
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -kTries; t <= kTries; ++t) {
      id = (float(t) + first) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kBlock; ++j) {
        const float q = float(kIq4NlLevels[nearest_level(id * xb[j])]);
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }
  if (num_blocks > 1) {
    *out.scales_h = 0;
    const float d = -max_scale / 32;
    *out.d = float_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    for (int ib = 0; ib < num_blocks; ++ib) {
      int l = std::max(-32, std::min(31, nearest_int(id * scales[ib])));
      const float dl = d * float(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < kBlock; ++j) L[ib * kBlock + j] = uint8_t(nearest_level(idl * x[ib * kBlock + j]));
      l += 32;
      const uint8_t low = uint8_t(l & 0xf), high = uint8_t(l >> 4);
      if (ib % 2 == 0)
        out.scales_l[ib / 2] = low;
      else
        out.scales_l[ib / 2] = uint8_t(out.scales_l[ib / 2] | (low << 4));
      *out.scales_h = uint16_t(*out.scales_h | (high << (2 * (ib % 8))));
    }
  } else {
    *out.d = float_to_fp16(scales[0]);
    const float id = scales[0] != 0 ? 1 / scales[0] : 0;
    for (int j = 0; j < super; ++j) L[j] = uint8_t(nearest_level(id * x[j]));
  }
  for (int i = 0; i < super / 32; ++i)
    for (int j = 0; j < 16; ++j) out.qs[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void check_rows(int64_t row_len, int64_t block, const char* type) {
  PAGODA_CHECK(row_len > 0 && row_len % block == 0, "{} rows hold whole blocks of {} values, got {}", type, block,
               row_len);
}

}  // namespace

void quantize_rows_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_rows(row_len, kBlock, "IQ4_NL");
  const int64_t per_row = row_len / kBlock;
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t b = 0; b < per_row; ++b) {
      BlockIQ4_NL& blk = y[r * per_row + b];
      quantize_super_block(kBlock, x + r * row_len + b * kBlock,
                           importance != nullptr ? importance + b * kBlock : nullptr,
                           {&blk.d, blk.qs, nullptr, nullptr});
    }
}

void quantize_rows_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_rows(row_len, kQK_K, "IQ4_XS");
  const int64_t per_row = row_len / kQK_K;
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t b = 0; b < per_row; ++b) {
      BlockIQ4_XS& blk = y[r * per_row + b];
      quantize_super_block(int(kQK_K), x + r * row_len + b * kQK_K,
                           importance != nullptr ? importance + b * kQK_K : nullptr,
                           {&blk.d, blk.qs, &blk.scales_h, blk.scales_l});
    }
}

}  // namespace pagoda::quant
