// Scalar reference of the AVX512-BF16 bf16 matmul (avx512/bf16/matmul_bf16.cc): the same arithmetic, step by step,
// so the test can ask that kernel for these bits. The activations rounded to bf16 as vcvtne2ps2bf16 rounds them
// (nearest even, subnormals to signed zero); per (row, token), 16 lanes, lane j summing the pairs of inputs
// 32k + 2j and 32k + 2j + 1 in k order as vdpbf16ps does (the odd product first, then the even one, each added with
// one rounding, subnormal inputs read as zero and subnormal sums flushed to zero); then the 16 lanes added in
// transpose_sum16's tree. The steps of 32 inputs start where the weights' 64-byte lines do when every row starts at
// the same place in a line (num_in a multiple of 32): input i is then virtual input phase + i, with
// phase = (address of w mod 64) / 2, and the virtual inputs outside the row are zeros. Owns only this reference; the
// plain f32-sum one is ref/matmul.cc's matmul_bf16.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {
namespace {

float flush_subnormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// vdpbf16ps's operand: a bf16 value as f32, a subnormal one read as zero.
float bf16_operand(uint16_t b) { return flush_subnormal(bf16_to_float(b)); }

// acc + a * b with one rounding (a bf16 product is exact in f32's precision), the sum flushed as vdpbf16ps does.
float add_product(float acc, float a, float b) { return flush_subnormal(std::fma(a, b, acc)); }

// The sum of 16 lanes in transpose_sum16's order: within each quarter (l0 + l2) + (l1 + l3), then the quarters
// (q0 + q1) + (q2 + q3).
float lane_tree_sum(const float (&lane)[16]) {
  float quarter[4];
  for (int q = 0; q < 4; ++q) {
    const float* l = lane + 4 * q;
    quarter[q] = (l[0] + l[2]) + (l[1] + l[3]);
  }
  return (quarter[0] + quarter[1]) + (quarter[2] + quarter[3]);
}

}  // namespace

uint16_t bf16_activation(float v) {
  if (std::isnan(v)) return float_to_bf16(v);
  return float_to_bf16(flush_subnormal(v));
}

void matmul_bf16_pairs(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const auto* wb = static_cast<const uint16_t*>(w);
  const int64_t phase = num_in % 32 == 0 ? int64_t(reinterpret_cast<uintptr_t>(w) % 64) / 2 : 0;
  const int64_t padded = (phase + num_in + 31) / 32 * 32;
  std::vector<float> xr(static_cast<size_t>(padded)), wr(static_cast<size_t>(padded));
  const auto in_row = [&](int64_t v) { return v >= phase && v < phase + num_in; };
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t v = 0; v < padded; ++v)
      xr[size_t(v)] = in_row(v) ? bf16_operand(bf16_activation(x[t * num_in + v - phase])) : 0.0f;
    for (int64_t o = 0; o < num_out; ++o) {
      for (int64_t v = 0; v < padded; ++v) wr[size_t(v)] = in_row(v) ? bf16_operand(wb[o * num_in + v - phase]) : 0.0f;
      float lane[16] = {};
      for (int64_t k = 0; k < padded; k += 32)
        for (int j = 0; j < 16; ++j) {
          const size_t even = size_t(k + 2 * j), odd = even + 1;
          lane[j] = add_product(lane[j], wr[odd], xr[odd]);
          lane[j] = add_product(lane[j], wr[even], xr[even]);
        }
      y[t * num_out + o] = lane_tree_sum(lane);
    }
  }
}

}  // namespace pagoda::kernels::ref
