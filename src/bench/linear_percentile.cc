// numpy-style percentiles and the summary statistics built on them.
#include "bench/linear_percentile.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagoda::bench {

double linear_percentile(std::span<const double> sorted, double percent) {
  if (sorted.empty()) return 0.0;
  const double pos = std::clamp(percent, 0.0, 100.0) / 100.0 * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

LatencyStats LatencyStats::of(std::vector<double> samples, std::span<const double> percents) {
  LatencyStats s;
  for (double p : percents) s.percentiles.emplace_back(p, 0.0);
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const double n = double(samples.size());
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double sq = 0.0;
  for (double x : samples) sq += (x - s.mean) * (x - s.mean);
  s.std_dev = std::sqrt(sq / n);
  s.median = linear_percentile(samples, 50.0);
  for (auto& [p, v] : s.percentiles) v = linear_percentile(samples, p);
  return s;
}

}  // namespace pagoda::bench
