// Histogram: a Prometheus-style cumulative histogram of one quantity (seconds, tokens): fixed upper bounds
// chosen at construction, a count per bucket, the sum and the total count. Thread-safe (observe and snapshot
// may race); a plain value comes out of snapshot().
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace pagoda::metrics {

struct HistogramSnapshot {
  std::vector<double> upper_bounds;     // ascending; the implicit last bucket is +Inf
  std::vector<uint64_t> bucket_counts;  // [upper_bounds.size() + 1], NOT cumulative
  double sum = 0.0;
  uint64_t count = 0;
};

class Histogram {
 public:
  // `upper_bounds` must be strictly ascending (checked).
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  HistogramSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  HistogramSnapshot data_;
};

}  // namespace pagoda::metrics
