// ggml's Q2_K ... Q6_K quantizers: per 32- (or 16-) value sub-block a scale (and min) search, the sub-block scales
// quantized to 4, 6 or 8 bits against the super-block's fp16 d (and dmin), then every value re-rounded against its
// stored, fp16-rounded scale. Q4_K and Q5_K share everything but the bit count and the packing of the fifth bit;
// Q2_K and Q3_K the packing of the low two bits.
#include "quant/kquant_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/quant_search.h"

namespace pagoda::quant {
namespace {

constexpr float kQ6KZeroEps = 1e-15f;

void check_kquant_rows(int64_t row_len, const char* type) {
  PAGODA_CHECK(row_len > 0 && row_len % kQK_K == 0, "{} rows hold whole super-blocks of {} values, got {}", type,
               kQK_K, row_len);
}

// Packs sub-block j's 6-bit scale and min as kquant_scale_min reads them.
void pack_scale_min(uint8_t* scales, int j, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] |= uint8_t((ls >> 4) << 6);
    scales[j - 0] |= uint8_t((lm >> 4) << 6);
  }
}

// The fields Q4_K and Q5_K share; `nmax` is 15 or 31. Fills d, dmin, scales and the per-value levels L.
template <typename Block>
void search_scale_min_block(const float* x, Block& y, int nmax, const float* importance, uint8_t L[kQK_K]) {
  uint8_t Laux[32];
  float weights[32];
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  std::memset(y.scales, 0, sizeof(y.scales));
  if (importance == nullptr) {
    // The reference search: weights |x| + rms of the sub-block, sub-block scales quantized against their maximum.
    float max_scale = 0;
    float max_min = 0;
    const float rmin = nmax == 15 ? -1.f : -0.5f;
    const int nstep = nmax == 15 ? 20 : 15;
    for (int j = 0; j < kQK_K / 32; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < kQK_K / 32; ++j) {
      // ggml stores the rounded value in a byte before clamping it.
      const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
      const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
      pack_scale_min(y.scales, j, ls, lm);
    }
    y.d = float_to_fp16(max_scale / 63.f);
    y.dmin = float_to_fp16(max_min / 63.f);
  } else {
    // The weighted search: importance * sqrt(sigma^2 + x^2) per value, the sub-block scales and mins themselves
    // quantized by a weighted search with each sub-block's total weight.
    uint8_t Ls[kQK_K / 32];
    uint8_t Lm[kQK_K / 32];
    float sw[kQK_K / 32];
    float sum_x2 = 0;
    for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
    const float sigma2 = 2 * sum_x2 / float(kQK_K);
    for (int j = 0; j < kQK_K / 32; ++j) {
      const float* qw = importance + 32 * j;
      for (int l = 0; l < 32; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 32; ++l) sumw += weights[l];
      sw[j] = sumw;
      scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float d_block = make_qp_quants(kQK_K / 32, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(kQK_K / 32, 63, mins, Lm, sw);
    for (int j = 0; j < kQK_K / 32; ++j)
      pack_scale_min(y.scales, j, std::min<uint8_t>(63, Ls[j]), std::min<uint8_t>(63, Lm[j]));
    y.d = float_to_fp16(d_block);
    y.dmin = float_to_fp16(m_block);
  }
  // Every value again against the stored scale and min.
  for (int j = 0; j < kQK_K / 32; ++j) {
    uint8_t sc, m;
    kquant_scale_min(y.scales, j, &sc, &m);
    const float d = fp16_to_float(y.d) * float(sc);
    if (d == 0) continue;
    const float dm = fp16_to_float(y.dmin) * float(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
}

// The low two bits of 256 levels, as Q2_K and Q3_K store them: values 128h + 32g + l at bits 2g of qs[32h + l].
void pack_bit_pairs(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l)
      qs[32 * h + l] = uint8_t(L[128 * h + l] | (L[128 * h + l + 32] << 2) | (L[128 * h + l + 64] << 4) |
                               (L[128 * h + l + 96] << 6));
}

void quantize_block_q2_K(const float* x, BlockQ2_K& y, const float* importance) {
  uint8_t L[kQK_K];
  uint8_t Laux[16];
  float weights[16];
  float mins[kQK_K / 16];
  float scales[kQK_K / 16];
  if (importance == nullptr) {
    // The reference search: weights |x|, then scales and mins each quantized to 4 bits against their maximum.
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
      y.d = float_to_fp16(max_scale / 15.f);
    } else {
      for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = 0;
      y.d = float_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = uint8_t(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      y.dmin = float_to_fp16(max_min / 15.f);
    } else {
      y.dmin = float_to_fp16(0.f);
    }
  } else {
    // The weighted search: importance * sqrt(sigma^2 + x^2), the scales and mins quantized by a weighted search.
    float sw[kQK_K / 16] = {};
    uint8_t Ls[kQK_K / 16], Lm[kQK_K / 16];
    float sum_x2 = 0;
    for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
    const float sigma2 = sum_x2 / float(kQK_K);
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float* qw = importance + 16 * j;
      for (int l = 0; l < 16; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      for (int l = 0; l < 16; ++l) sw[j] += weights[l];
      scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float d_block = make_qp_quants(kQK_K / 16, 15, scales, Ls, sw);
    const float m_block = make_qp_quants(kQK_K / 16, 15, mins, Lm, sw);
    y.d = float_to_fp16(d_block);
    y.dmin = float_to_fp16(m_block);
    for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = uint8_t(Ls[j] | (Lm[j] << 4));
  }
  // Every value again against the stored scale and min.
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = fp16_to_float(y.d) * float(y.scales[j] & 0xF);
    if (d == 0) continue;
    const float dm = fp16_to_float(y.dmin) * float(y.scales[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int((x[16 * j + ii] + dm) / d);
      L[16 * j + ii] = uint8_t(std::max(0, std::min(3, l)));
    }
  }
  pack_bit_pairs(L, y.qs);
}

// Q3_K's sixteen 6-bit scales (biased, 0..63) into their 12 bytes, as q3_K_scales reads them.
void pack_q3_K_scales(const int biased[16], uint8_t* packed) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const int l = biased[j];
    if (j < 8)
      packed[j] = uint8_t(l & 0xF);
    else
      packed[j - 8] = uint8_t(packed[j - 8] | ((l & 0xF) << 4));
    packed[8 + j % 4] = uint8_t(packed[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
  }
}

void quantize_block_q3_K(const float* x, BlockQ3_K& y, const float* importance) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  int biased[kQK_K / 16];
  if (importance == nullptr) {
    // The reference search, the sub-block scales quantized to 6 bits against the largest in magnitude.
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
      const float abs_scale = std::fabs(scales[j]);
      if (abs_scale > amax) {
        amax = abs_scale;
        max_scale = scales[j];
      }
    }
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j)
        biased[j] = std::max(-32, std::min(31, int(int8_t(nearest_int(iscale * scales[j]))))) + 32;
      pack_q3_K_scales(biased, y.scales);
      y.d = float_to_fp16(1 / iscale);
    } else {
      std::memset(y.scales, 0, sizeof(y.scales));
      y.d = float_to_fp16(0.f);
    }
  } else {
    // The weighted search: importance * sqrt(sigma^2 + x^2) per value, the scales by a weighted symmetric search.
    float weights[16];
    float sw[kQK_K / 16];
    int8_t Ls[kQK_K / 16];
    float sum_x2 = 0;
    for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
    const float sigma2 = 2 * sum_x2 / float(kQK_K);
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float* qw = importance + 16 * j;
      for (int l = 0; l < 16; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 16; ++l) sumw += weights[l];
      sw[j] = sumw;
      scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weights);
    }
    const float d_block = make_qx_quants(kQK_K / 16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < kQK_K / 16; ++j) biased[j] = Ls[j];
    pack_q3_K_scales(biased, y.scales);
    y.d = float_to_fp16(d_block);
  }
  // Every value again against the stored scale.
  int stored[16];
  q3_K_scales(y.scales, stored);
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = fp16_to_float(y.d) * float(stored[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d)));
      L[16 * j + ii] = int8_t(l + 4);
    }
  }
  // The third bit: value j's in bit j / 32 of hmask[j % 32].
  std::memset(y.hmask, 0, sizeof(y.hmask));
  uint8_t low[kQK_K];
  for (int j = 0; j < kQK_K; ++j) {
    int l = L[j];
    if (l > 3) {
      y.hmask[j % 32] = uint8_t(y.hmask[j % 32] | (1 << (j / 32)));
      l -= 4;
    }
    low[j] = uint8_t(l);
  }
  pack_bit_pairs(low, y.qs);
}

void quantize_block_q4_K(const float* x, BlockQ4_K& y, const float* importance) {
  uint8_t L[kQK_K];
  search_scale_min_block(x, y, 15, importance, L);
  uint8_t* q = y.qs;
  for (int j = 0; j < kQK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void quantize_block_q5_K(const float* x, BlockQ5_K& y, const float* importance) {
  uint8_t L[kQK_K];
  search_scale_min_block(x, y, 31, importance, L);
  std::memset(y.qh, 0, sizeof(y.qh));
  uint8_t* ql = y.qs;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kQK_K; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        y.qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        y.qh[j] |= m2;
      }
      ql[j] = uint8_t(l1 | (l2 << 4));
    }
    m1 = uint8_t(m1 << 2);
    m2 = uint8_t(m2 << 2);
    ql += 32;
  }
}

void quantize_block_q6_K(const float* x, BlockQ6_K& y, const float* importance) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < kQK_K / 16; ++ib) {
    const float scale =
        make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, importance != nullptr ? importance + 16 * ib : nullptr);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  if (max_abs_scale < kQ6KZeroEps) {
    std::memset(&y, 0, sizeof(y));
    y.d = float_to_fp16(0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  y.d = float_to_fp16(1 / iscale);
  for (int ib = 0; ib < kQK_K / 16; ++ib) y.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = fp16_to_float(y.d) * float(y.scales[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d)));
      L[16 * j + ii] = int8_t(l + 32);
    }
  }
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF;
      const uint8_t q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF;
      const uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = uint8_t(q1 | (q3 << 4));
      ql[l + 32] = uint8_t(q2 | (q4 << 4));
      qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                      ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

template <typename Block, void (*QuantizeBlock)(const float*, Block&, const float*)>
void quantize_kquant_rows(const float* x, Block* y, int64_t num_rows, int64_t row_len, const float* importance) {
  const int64_t blocks_per_row = row_len / kQK_K;
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t b = 0; b < blocks_per_row; ++b)
      QuantizeBlock(x + r * row_len + b * kQK_K, y[r * blocks_per_row + b],
                    importance != nullptr ? importance + b * kQK_K : nullptr);
}

}  // namespace

void quantize_rows_q2_K(const float* x, BlockQ2_K* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_kquant_rows(row_len, "Q2_K");
  quantize_kquant_rows<BlockQ2_K, quantize_block_q2_K>(x, y, num_rows, row_len, importance);
}

void quantize_rows_q3_K(const float* x, BlockQ3_K* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_kquant_rows(row_len, "Q3_K");
  quantize_kquant_rows<BlockQ3_K, quantize_block_q3_K>(x, y, num_rows, row_len, importance);
}

void quantize_rows_q4_K(const float* x, BlockQ4_K* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_kquant_rows(row_len, "Q4_K");
  quantize_kquant_rows<BlockQ4_K, quantize_block_q4_K>(x, y, num_rows, row_len, importance);
}

void quantize_rows_q5_K(const float* x, BlockQ5_K* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_kquant_rows(row_len, "Q5_K");
  quantize_kquant_rows<BlockQ5_K, quantize_block_q5_K>(x, y, num_rows, row_len, importance);
}

void quantize_rows_q6_K(const float* x, BlockQ6_K* y, int64_t num_rows, int64_t row_len, const float* importance) {
  check_kquant_rows(row_len, "Q6_K");
  quantize_kquant_rows<BlockQ6_K, quantize_block_q6_K>(x, y, num_rows, row_len, importance);
}

}  // namespace pagoda::quant
