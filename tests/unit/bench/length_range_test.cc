// LengthRange: the three spellings, their errors, and the draws each one makes.
#include "bench/length_range.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace pagoda::bench {
namespace {

using ::testing::HasSubstr;

TEST(LengthRangeTest, ParsesFixedUniformAndLogUniformAndPrintsThemBack) {
  for (const char* text : {"128", "64-512", "log:10-256"}) {
    Result<LengthRange> r = LengthRange::parse(text, "--output-len");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->to_string(), text);
  }
  EXPECT_TRUE(LengthRange::parse("log:10-256", "x")->log_uniform);
  EXPECT_FALSE(LengthRange::parse("10-256", "x")->log_uniform);
  EXPECT_EQ(LengthRange::parse("log:7", "x")->to_string(), "7");  // one value: nothing to draw
}

TEST(LengthRangeTest, BadSpellingsNameTheFlag) {
  for (const char* text : {"", "0", "5-4", "log:", "log:0-3", "lg:1-3", "1-", "-3", "a-b", "3-4-5"}) {
    Result<LengthRange> r = LengthRange::parse(text, "--input-len");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error(), HasSubstr("--input-len must be N, A-B or log:A-B")) << text;
  }
}

TEST(LengthRangeTest, LogUniformDrawsCoverTheRangeWithEachDecadeAsLikely) {
  const LengthRange r = *LengthRange::parse("log:10-999", "x");
  std::mt19937_64 rng(3);
  int lo = 0, hi = 0, min = 1 << 30, max = 0;
  const int n = 30000;
  for (int i = 0; i < n; ++i) {
    const int32_t v = r.draw(rng);
    ASSERT_GE(v, 10);
    ASSERT_LE(v, 999);
    min = std::min(min, v);
    max = std::max(max, v);
    (v < 100 ? lo : hi) += 1;
  }
  EXPECT_EQ(min, 10);
  EXPECT_EQ(max, 999);
  // [10, 100) and [100, 1000) are one decade each: about half the draws each (a uniform draw gives 9%).
  EXPECT_NEAR(double(lo) / n, 0.5, 0.02);
  // Uniform draws over the same range put about 9% below 100.
  const LengthRange u = *LengthRange::parse("10-999", "x");
  int below = 0;
  for (int i = 0; i < n; ++i) below += u.draw(rng) < 100;
  EXPECT_NEAR(double(below) / n, 90.0 / 990.0, 0.01);
}

}  // namespace
}  // namespace pagoda::bench
