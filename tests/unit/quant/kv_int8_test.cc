// Tests for the INT8 KV row format (src/quant/kv_int8.h): round-trip error within half a step, the largest
// magnitude maps to +-127 exactly, and zero rows stay zero with scale 0.
#include "quant/kv_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace pagoda {
namespace {

TEST(KvInt8, RoundTripErrorIsAtMostHalfAStep) {
  std::mt19937 rng(7);
  for (int32_t n : {1, 3, 8, 17, 64, 128}) {
    std::normal_distribution<float> dist(0.0f, 2.5f);
    std::vector<float> x(static_cast<size_t>(n)), back(static_cast<size_t>(n));
    std::vector<int8_t> q(static_cast<size_t>(n));
    for (float& value : x) value = dist(rng);
    const float scale = quantize_kv_int8(x.data(), n, q.data());
    float max_abs = 0.0f;
    for (float value : x) max_abs = std::max(max_abs, std::fabs(value));
    EXPECT_FLOAT_EQ(scale, max_abs / 127.0f) << n;
    dequantize_kv_int8(q.data(), scale, n, back.data());
    bool saw_extreme = false;
    for (int32_t i = 0; i < n; ++i) {
      EXPECT_LE(std::fabs(back[size_t(i)] - x[size_t(i)]), scale * 0.5f * 1.0001f) << n << " " << i;
      EXPECT_GE(q[size_t(i)], -127);
      saw_extreme |= (q[size_t(i)] == 127 || q[size_t(i)] == -127);
    }
    EXPECT_TRUE(saw_extreme) << "the largest magnitude maps to +-127, n=" << n;
  }
}

TEST(KvInt8, ZeroRowHasScaleZeroAndStaysZero) {
  std::vector<float> x(16, 0.0f), back(16, 1.0f);
  std::vector<int8_t> q(16, 5);
  EXPECT_EQ(quantize_kv_int8(x.data(), 16, q.data()), 0.0f);
  for (int8_t value : q) EXPECT_EQ(value, 0);
  dequantize_kv_int8(q.data(), 0.0f, 16, back.data());
  for (float value : back) EXPECT_EQ(value, 0.0f);
}

TEST(KvInt8, SignsAndExactMultiplesSurvive) {
  // Values that are exact multiples of the step come back exactly.
  const std::vector<float> x = {-127.0f, -1.0f, 0.0f, 2.0f, 63.0f, 127.0f};
  std::vector<int8_t> q(x.size());
  std::vector<float> back(x.size());
  const float scale = quantize_kv_int8(x.data(), int32_t(x.size()), q.data());
  EXPECT_FLOAT_EQ(scale, 1.0f);
  dequantize_kv_int8(q.data(), scale, int32_t(x.size()), back.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(back[i], x[i]) << i;
}

}  // namespace
}  // namespace pagoda
