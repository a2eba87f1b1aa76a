// ggml's Q4_1/Q5_0/Q5_1 reference quantizers (absolute-max and min/max scales, values rounded by adding one half and
// truncating) and the weighted searches of Q4_0/Q4_1/Q5_0/Q5_1 (weights importance * sqrt(sigma^2 + x^2), sigma^2 the
// row's mean square).
#include "quant/legacy_quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/quant_search.h"

namespace pagoda::quant {
namespace {

constexpr int kLegacyBlock = 32;

void check_legacy_rows(int64_t row_len, const char* type) {
  PAGODA_CHECK(row_len > 0 && row_len % kLegacyBlock == 0, "{} rows hold whole blocks of {} values, got {}", type, kLegacyBlock,
               row_len);
}

// Stores 32 five-bit levels as Q5_0/Q5_1 lay them out.
void pack_5bit(const uint8_t* levels, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kLegacyBlock / 2; ++j) {
    const uint8_t xi0 = levels[j];
    const uint8_t xi1 = levels[j + kLegacyBlock / 2];
    qs[j] = uint8_t((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + kLegacyBlock / 2);
  }
  std::memcpy(qh_bytes, &qh, sizeof(qh));
}

void q5_0_reference_block(const float* x, BlockQ5_0& y) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = float_to_fp16(d);
  uint8_t levels[kLegacyBlock];
  // ggml converts x * id + 16.5 to int8 (truncation) before clamping to 31.
  for (int j = 0; j < kLegacyBlock; ++j) levels[j] = uint8_t(std::min<int>(31, int8_t(x[j] * id + 16.5f)));
  pack_5bit(levels, y.qs, y.qh);
}

void q5_1_reference_block(const float* x, BlockQ5_1& y) {
  float min = FLT_MAX;
  float max = -FLT_MAX;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / ((1 << 5) - 1);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = float_to_fp16(d);
  y.m = float_to_fp16(min);
  uint8_t levels[kLegacyBlock];
  for (int j = 0; j < kLegacyBlock; ++j) levels[j] = uint8_t((x[j] - min) * id + 0.5f);
  pack_5bit(levels, y.qs, y.qh);
}

void q4_1_reference_block(const float* x, BlockQ4_1& y) {
  float min = FLT_MAX;
  float max = -FLT_MAX;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / ((1 << 4) - 1);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = float_to_fp16(d);
  y.m = float_to_fp16(min);
  for (int j = 0; j < kLegacyBlock / 2; ++j) {
    const uint8_t xi0 = uint8_t(std::min<int>(15, int8_t((x[j] - min) * id + 0.5f)));
    const uint8_t xi1 = uint8_t(std::min<int>(15, int8_t((x[j + kLegacyBlock / 2] - min) * id + 0.5f)));
    y.qs[j] = uint8_t(xi0 | (xi1 << 4));
  }
}

// sigma^2 of a row and the per-value weights of block `b`.
float row_sigma2(const float* x, int64_t row_len) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < row_len; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / float(row_len);
}

void block_weights(const float* xb, const float* qw, float sigma2, float* weight) {
  for (int j = 0; j < kLegacyBlock; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

// The row loop every legacy type shares: without an importance matrix each block goes through `reference` (ggml's
// plain quantizer); with one, each block's weights are made from the row's sigma^2 and handed to `weighted`.
template <typename Block, typename Reference, typename Weighted>
void quantize_legacy_rows(const float* x, Block* y, int64_t num_rows, int64_t row_len, const float* importance,
                          const char* type, Reference reference, Weighted weighted) {
  check_legacy_rows(row_len, type);
  const int64_t nb = row_len / kLegacyBlock;
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* xr = x + r * row_len;
    Block* yr = y + r * nb;
    if (importance == nullptr) {
      for (int64_t b = 0; b < nb; ++b) reference(xr + b * kLegacyBlock, yr[b]);
      continue;
    }
    const float sigma2 = row_sigma2(xr, row_len);
    float weight[kLegacyBlock];
    for (int64_t b = 0; b < nb; ++b) {
      block_weights(xr + b * kLegacyBlock, importance + b * kLegacyBlock, sigma2, weight);
      weighted(xr + b * kLegacyBlock, weight, yr[b]);
    }
  }
}

// The weighted Q4_1/Q5_1 block: a min and a scale searched by make_qkx3_quants over levels 0..max_level.
template <typename Block>
void weighted_min_block(const float* xb, const float* weight, int max_level, uint8_t* L, Block& y) {
  uint8_t Laux[kLegacyBlock];
  float neg_min;
  const float d = make_qkx3_quants(kLegacyBlock, max_level, xb, weight, L, &neg_min, Laux, -0.9f, 0.05f, 36, false);
  y.d = float_to_fp16(d);
  y.m = float_to_fp16(-neg_min);
}

}  // namespace

void quantize_rows_q5_0(const float* x, BlockQ5_0* y, int64_t num_rows, int64_t row_len, const float* importance) {
  quantize_legacy_rows(x, y, num_rows, row_len, importance, "Q5_0", q5_0_reference_block,
                       [](const float* xb, const float* weight, BlockQ5_0& yb) {
                         int8_t L[kLegacyBlock];
                         yb.d = float_to_fp16(make_qx_quants(kLegacyBlock, 16, xb, L, 1, weight));
                         uint8_t levels[kLegacyBlock];
                         for (int j = 0; j < kLegacyBlock; ++j) levels[j] = uint8_t(L[j]);
                         pack_5bit(levels, yb.qs, yb.qh);
                       });
}

void quantize_rows_q4_1(const float* x, BlockQ4_1* y, int64_t num_rows, int64_t row_len, const float* importance) {
  quantize_legacy_rows(x, y, num_rows, row_len, importance, "Q4_1", q4_1_reference_block,
                       [](const float* xb, const float* weight, BlockQ4_1& yb) {
                         uint8_t L[kLegacyBlock];
                         weighted_min_block(xb, weight, 15, L, yb);
                         for (int j = 0; j < 16; ++j) yb.qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
                       });
}

void quantize_rows_q5_1(const float* x, BlockQ5_1* y, int64_t num_rows, int64_t row_len, const float* importance) {
  quantize_legacy_rows(x, y, num_rows, row_len, importance, "Q5_1", q5_1_reference_block,
                       [](const float* xb, const float* weight, BlockQ5_1& yb) {
                         uint8_t L[kLegacyBlock];
                         weighted_min_block(xb, weight, 31, L, yb);
                         pack_5bit(L, yb.qs, yb.qh);
                       });
}

void quantize_rows_q4_0(const float* x, BlockQ4_0* y, int64_t num_rows, int64_t row_len, const float* importance) {
  quantize_legacy_rows(x, y, num_rows, row_len, importance, "Q4_0",
                       [](const float* xb, BlockQ4_0& yb) { quantize_row_q4_0(xb, &yb, kLegacyBlock); },
                       [](const float* xb, const float* weight, BlockQ4_0& yb) {
                         int8_t L[kLegacyBlock];
                         yb.d = float_to_fp16(make_qx_quants(kLegacyBlock, 8, xb, L, 1, weight));
                         for (int j = 0; j < 16; ++j) yb.qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
                       });
}

}  // namespace pagoda::quant
