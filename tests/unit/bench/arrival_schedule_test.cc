// arrival_offsets_s: the gaps have mean 1 / rate and coefficient of variation 1 / sqrt(burstiness) (gamma
// with shape = burstiness), checked on a large fixed-seed sample; inf sends everything at once. Also the KV
// bytes-per-token formula `pagoda tune` plans with (a one-line function: no test file of its own).
#include "bench/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/kv_bytes_per_token.h"

namespace pagoda::bench {
namespace {

struct GapStats {
  double mean = 0;
  double cv = 0;
};

GapStats gap_stats(const std::vector<double>& offsets) {
  std::vector<double> gaps;
  for (size_t i = 1; i < offsets.size(); ++i) gaps.push_back(offsets[i] - offsets[i - 1]);
  double sum = 0, sq = 0;
  for (double g : gaps) sum += g;
  const double mean = sum / double(gaps.size());
  for (double g : gaps) sq += (g - mean) * (g - mean);
  return {mean, std::sqrt(sq / double(gaps.size())) / mean};
}

TEST(ArrivalSchedule, FirstAtZeroAndNonDecreasing) {
  const std::vector<double> t = arrival_offsets_s(100, 5.0, 1.0, 1);
  ASSERT_EQ(t.size(), 100u);
  EXPECT_EQ(t[0], 0.0);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i], t[i - 1]);
  EXPECT_GT(t.back(), 0.0);
}

TEST(ArrivalSchedule, InfiniteRateSendsAllAtOnce) {
  for (double t : arrival_offsets_s(16, std::numeric_limits<double>::infinity(), 1.0, 3)) EXPECT_EQ(t, 0.0);
}

TEST(ArrivalSchedule, SameSeedSameSchedule) {
  EXPECT_EQ(arrival_offsets_s(50, 2.0, 0.5, 9), arrival_offsets_s(50, 2.0, 0.5, 9));
  EXPECT_NE(arrival_offsets_s(50, 2.0, 0.5, 9), arrival_offsets_s(50, 2.0, 0.5, 10));
}

TEST(ArrivalSchedule, RateAndBurstinessShapeTheGaps) {
  struct Case {
    double rate, burstiness;
  };
  for (const Case c : {Case{4.0, 1.0}, Case{0.2, 1.0}, Case{10.0, 0.25}, Case{1.0, 4.0}}) {
    SCOPED_TRACE(testing::Message() << "rate " << c.rate << " burstiness " << c.burstiness);
    const GapStats s = gap_stats(arrival_offsets_s(40001, c.rate, c.burstiness, 42));
    EXPECT_NEAR(s.mean, 1.0 / c.rate, 0.03 / c.rate);  // 3%: the standard error here is at most 1%
    EXPECT_NEAR(s.cv, 1.0 / std::sqrt(c.burstiness), 0.06 / std::sqrt(c.burstiness));
  }
}

// kv_bytes_per_token (pagoda tune's formula) against hand-computed sizes.
TEST(KvBytesPerToken, HandComputedShapes) {
  // TinyLlama-1.1B: 2 x 22 layers x 4 KV heads x 64 (2048 / 32) x 2 bytes = 22,528 bytes of F16 per token.
  const std::optional<synth::ModelShape> tiny = synth::find_model_shape("tinyllama-1.1b");
  ASSERT_TRUE(tiny);
  EXPECT_EQ(kv_bytes_per_token(*tiny, 2), 22528);
  EXPECT_EQ(kv_bytes_per_token(*tiny, 1), 11264);
  // Llama-2-7B: 2 x 32 x 32 x 128 x 2 = 512 KiB per token; 4,096 tokens of F16 KV = 2 GiB per sequence.
  const std::optional<synth::ModelShape> llama7b = synth::find_model_shape("llama2-7b");
  ASSERT_TRUE(llama7b);
  EXPECT_EQ(kv_bytes_per_token(*llama7b, 2), 512 * 1024);
  EXPECT_EQ(kv_bytes_per_token(*llama7b, 2) * 4096, int64_t(2) << 30);
  EXPECT_EQ(kv_bytes_per_token(32, 32, 128, 4), 1024 * 1024);
  // Qwen3-0.6B sets head_dim 128 though 1024 / 16 is 64: 2 x 28 x 8 x 128 x 2 = 114,688 bytes of F16 per token.
  const std::optional<synth::ModelShape> qwen3 = synth::find_model_shape("qwen3-0.6b");
  ASSERT_TRUE(qwen3);
  EXPECT_EQ(kv_bytes_per_token(*qwen3, 2), 114688);
}

}  // namespace
}  // namespace pagoda::bench
