// INT8 per-row format: the row layout (f32 scale, then the values), hand-computed rounding, odd rows (all zeros,
// a tail-length row, -128 never written), and the quantize -> dequantize bound |x - x'| <= d / 2.
#include "quant/row_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace pagoda::quant {
namespace {

TEST(RowInt8Test, RowIsScaleThenValues) {
  EXPECT_EQ(int8_row_bytes(172), 176);
  const std::vector<float> x = {-127.0f, 0.5f, 1.49f, -2.5f, 63.5f};
  std::vector<uint8_t> row(size_t(int8_row_bytes(5)));
  quantize_row_int8(x.data(), row.data(), 5);
  float scale;
  std::memcpy(&scale, row.data(), 4);
  EXPECT_EQ(scale, 1.0f);  // max |x| = 127
  // round half away from zero
  const int8_t expected[] = {-127, 1, 1, -3, 64};
  EXPECT_EQ(std::memcmp(row.data() + 4, expected, 5), 0);
  std::vector<float> y(5);
  dequantize_rows_int8(row.data(), y.data(), 1, 5);
  EXPECT_EQ(y, (std::vector<float>{-127.0f, 1.0f, 1.0f, -3.0f, 64.0f}));
}

TEST(RowInt8Test, ZeroRowAndNeverMinus128) {
  std::vector<float> zeros(33, 0.0f);
  std::vector<int8_t> q(33, 5);
  EXPECT_EQ(quantize_int8_values(zeros.data(), q.data(), 33), 0.0f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
  std::vector<float> x = {-1.0f, 1.0f, -0.999999f};
  std::vector<int8_t> q3(3);
  quantize_int8_values(x.data(), q3.data(), 3);
  EXPECT_EQ(q3[0], -127);
  EXPECT_EQ(q3[1], 127);
}

TEST(RowInt8Test, ErrorIsAtMostHalfAStep) {
  std::mt19937 rng(5);
  for (int64_t n : {1, 31, 64, 172, 4096}) {
    for (float scale : {1e-6f, 0.02f, 1.0f, 1e4f}) {
      std::normal_distribution<float> dist(0.0f, scale);
      const int64_t num_rows = 3;
      std::vector<float> x(size_t(num_rows * n));
      for (float& v : x) v = dist(rng);
      std::vector<uint8_t> rows(size_t(num_rows * int8_row_bytes(n)));
      for (int64_t r = 0; r < num_rows; ++r)
        quantize_row_int8(x.data() + r * n, rows.data() + r * int8_row_bytes(n), n);
      std::vector<float> y(x.size());
      dequantize_rows_int8(rows.data(), y.data(), num_rows, n);
      for (int64_t r = 0; r < num_rows; ++r) {
        float amax = 0.0f;
        for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[size_t(r * n + i)]));
        const float d = int8_row_scale(rows.data() + r * int8_row_bytes(n));
        EXPECT_EQ(d, amax / 127.0f);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_LE(std::fabs(x[size_t(r * n + i)] - y[size_t(r * n + i)]), d * 0.5f * (1.0f + 1e-5f))
              << "n " << n << " scale " << scale << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::quant
