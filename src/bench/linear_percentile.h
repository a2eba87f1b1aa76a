// linear_percentile / LatencyStats: the statistics of vLLM's serving benchmark. Percentiles interpolate
// linearly between closest ranks (numpy.percentile's default), so figures compare one to one with vLLM's.
// Pure functions over plain values.
#pragma once

#include <span>
#include <utility>
#include <vector>

namespace pagoda::bench {

// The `percent` (0..100) percentile of `sorted` (ascending): position p/100 * (n - 1), interpolated between
// its neighbours. 0 for an empty list.
double linear_percentile(std::span<const double> sorted, double percent);

// Mean, median, population standard deviation and the requested percentiles of a list of samples; all zero
// when there are none (as vLLM reports them).
struct LatencyStats {
  double mean = 0.0;
  double median = 0.0;
  double std_dev = 0.0;
  std::vector<std::pair<double, double>> percentiles;  // (percent, value), in the order asked

  static LatencyStats of(std::vector<double> samples, std::span<const double> percents);
};

}  // namespace pagoda::bench
