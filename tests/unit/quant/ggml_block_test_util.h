// Helpers the GGUF block-format dequantization tests share: f32 bit comparison, the fp16 super-block scales each
// test runs through (ordinary, negative, subnormal, the largest finite, -0), and the 32-value nibble packing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace pagoda::quant::testing {

inline uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(f32_bits(got[i]), f32_bits(want[i])) << "element " << i << ": got " << got[i] << ", want " << want[i];
}

// 1, 0.1, -0.33, the smallest and largest subnormals, the largest finite of both signs, -0.
inline constexpr uint16_t kFp16Scales[] = {0x3c00, 0x2e66, 0xb555, 0x0001, 0x03ff, 0x7bff, 0xfbff, 0x8000};

// Element j < 16 in qs[j]'s low nibble, j >= 16 in qs[j - 16]'s high nibble (every 32-value ggml block).
inline void pack_nibbles(const int q[32], uint8_t qs[16]) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((q[j] & 15) | (q[j + 16] & 15) << 4);
}

}  // namespace pagoda::quant::testing
