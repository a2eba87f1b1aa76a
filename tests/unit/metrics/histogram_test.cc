// Histogram: Prometheus "le" bucketing, sums and counts, and concurrent observers.
#include "metrics/histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pagoda::metrics {
namespace {

TEST(HistogramTest, ValuesLandInTheFirstBucketWhoseBoundIsAtLeastThem) {
  Histogram h({0.1, 1.0, 10.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 11.0, 1e9}) h.observe(v);
  const HistogramSnapshot s = h.snapshot();
  ASSERT_EQ(s.bucket_counts.size(), 4u);
  EXPECT_EQ(s.bucket_counts[0], 2u);  // 0.05, 0.1
  EXPECT_EQ(s.bucket_counts[1], 2u);  // 0.5, 1.0
  EXPECT_EQ(s.bucket_counts[2], 2u);  // 5, 10
  EXPECT_EQ(s.bucket_counts[3], 2u);  // +Inf
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.sum, 0.05 + 0.1 + 0.5 + 1.0 + 5.0 + 10.0 + 11.0 + 1e9);
}

TEST(HistogramTest, ConcurrentObserversLoseNothing) {
  Histogram h({1.0, 2.0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.observe(double(i % 3));
    });
  for (auto& t : threads) t.join();
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.bucket_counts[0] + s.bucket_counts[1] + s.bucket_counts[2], 40000u);
}

TEST(HistogramDeathTest, BoundsMustAscend) { EXPECT_DEATH(Histogram({1.0, 1.0}), "ascend"); }

}  // namespace
}  // namespace pagoda::metrics
