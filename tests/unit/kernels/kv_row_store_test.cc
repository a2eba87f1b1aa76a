// quantize_kv_row (kernels.h): every SIMD level's KV row store against quant/kv_row.h's scalar writer, byte for byte,
// for every cache type it takes, over row lengths around the vector widths and values that exercise the rounding's
// edges: f16 ties, overflow to inf at 65520, f16 subnormals and underflow, bf16 ties, infinities, signed zeros, and
// nans (the scalar writer's one quiet nan, whatever the payload). The scalar table's entry must be the writer itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/types.h"
#include "kernels/kernels.h"
#include "quant/kv_row.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Random values of every magnitude class, with the edge cases placed at random lanes.
std::vector<float> edge_values(std::mt19937& rng, int64_t n) {
  std::vector<float> x = random_floats(rng, n, 8.0f);
  const float edges[] = {
      65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e6f, 0.0f, -0.0f,
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), std::ldexp(1.5f, -24), std::ldexp(1.0f, -25),
      std::ldexp(1.0f, -26), -std::ldexp(3.0f, -25), std::ldexp(1.0f, -130),  // f16 normal edge, subnormals, ties
      1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11),                 // f16 ties to even
      from_bits(0x3f808000u), from_bits(0x3f818000u), from_bits(0x3f80ffffu),     // bf16 ties and carries
      from_bits(0x7f7fffffu), from_bits(0xff7fffffu)};                           // bf16 overflow to inf
  std::uniform_int_distribution<int64_t> lane(0, n - 1);
  for (float e : edges)
    if (n > 4) x[size_t(lane(rng))] = e;
  return x;
}

void put_nans(std::mt19937& rng, std::vector<float>& x) {
  std::uniform_int_distribution<size_t> lane(0, x.size() - 1);
  x[lane(rng)] = from_bits(0x7fc00000u);
  x[lane(rng)] = from_bits(0xffa12345u);  // a signalling nan with a payload
  x[lane(rng)] = from_bits(0x7f800001u);
}

class KvRowStoreTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(KvRowStoreTest);

TEST(KvRowStoreScalarTest, ScalarTableStoresWithTheScalarWriter) {
  const KernelTable* scalar = kernels_for(Isa::kScalar);
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(scalar->quantize_kv_row, &pagoda::quantize_kv_row);
}

TEST_P(KvRowStoreTest, SimdWritesTheScalarBytes) {
  std::mt19937 rng(41);
  const KvDType types[] = {KvDType::kF32, KvDType::kF16, KvDType::kBF16, KvDType::kQ8_0, KvDType::kQ4_0};
  const int32_t lengths[] = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 96, 127, 128, 1024, 4096};
  int32_t checked = 0;
  for (KvDType type : types) {
    for (int32_t n : lengths) {
      if (n % kv_dtype_block_values(type) != 0) continue;
      for (bool nans : {false, true}) {
        if (nans && (type == KvDType::kQ8_0 || type == KvDType::kQ4_0)) continue;  // nan has no block contract
        std::vector<float> x = edge_values(rng, n);
        if (nans) put_nans(rng, x);
        const size_t bytes = size_t(kv_row_bytes(type, n));
        std::vector<uint8_t> want(bytes, 0xa5), got(bytes, 0x5a);
        pagoda::quantize_kv_row(type, x.data(), n, want.data());
        simd_->quantize_kv_row(type, x.data(), n, got.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
            << kv_dtype_name(type) << " row of " << n << (nans ? " with nans" : "");
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 60);
}

}  // namespace
}  // namespace pagoda::kernels
