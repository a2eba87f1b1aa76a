// kernel_test_values: what the kernel tests (tests/unit/kernels) share: uniform random floats, the Q8_0 block size,
// the Q8_0 round trip a quantized matmul applies to its activations, the sum of |w * x| that scales a matmul's
// rounding bound, and the check of a matmul against the exact products. Defined once, so the test files can share a
// unity batch.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "quant/block_q8_0.h"

namespace pagoda::testing_support {

inline constexpr int64_t kQk = quant::BlockQ8_0::kNumValues;  // values per Q8_0 (and Q4_0) block

// n values uniform in [-scale, scale).
inline std::vector<float> random_floats(std::mt19937& rng, int64_t n, float scale = 1.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// x through Q8_0 and back (x.size() a multiple of 32): what a Q8_0-activation kernel multiplies.
inline std::vector<float> q8_0_round_trip(const std::vector<float>& x) {
  std::vector<quant::BlockQ8_0> blocks(x.size() / size_t(kQk));
  std::vector<float> out(x.size());
  quant::quantize_row_q8_0(x.data(), blocks.data(), int64_t(x.size()));
  quant::dequantize_row_q8_0(blocks.data(), out.data(), int64_t(x.size()));
  return out;
}

// out[t * num_out + o] = sum_i |a[o * num_in + i] * b[t * num_in + i]|: the magnitude a dot product's rounding
// error scales with.
inline std::vector<double> abs_products(const std::vector<float>& a, const std::vector<float>& b, int64_t num_out,
                                        int64_t num_in, int64_t num_tokens) {
  std::vector<double> out(size_t(num_tokens * num_out));
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o) {
      double sum = 0.0;
      for (int64_t i = 0; i < num_in; ++i)
        sum += std::fabs(double(a[size_t(o * num_in + i)]) * b[size_t(t * num_in + i)]);
      out[size_t(t * num_out + o)] = sum;
    }
  return out;
}

// Each y[t * num_out + o] within 1e-5 of abs_products' magnitude (+ 1e-6) of the exact (double) product of w's row o
// and x's token t: a reference kernel checked against its dequantized weights and the activations as it rounds them.
inline void expect_near_exact_products(const std::vector<float>& y, const std::vector<float>& w,
                                       const std::vector<float>& x, int64_t num_out, int64_t num_in, int64_t num_tokens,
                                       const std::string& label) {
  const std::vector<double> magnitude = abs_products(w, x, num_out, num_in, num_tokens);
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o) {
      double exact = 0.0;
      for (int64_t i = 0; i < num_in; ++i) exact += double(w[size_t(o * num_in + i)]) * x[size_t(t * num_in + i)];
      const size_t k = size_t(t * num_out + o);
      EXPECT_NEAR(y[k], exact, 1e-5 * magnitude[k] + 1e-6) << label << " token " << t << " row " << o;
    }
}

}  // namespace pagoda::testing_support
