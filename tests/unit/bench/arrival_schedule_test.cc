// arrival_offsets_s: the gaps have mean 1 / rate and coefficient of variation 1 / sqrt(burstiness) (gamma
// with shape = burstiness), checked on a large fixed-seed sample; inf sends everything at once.
#include "bench/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace pagoda::bench
