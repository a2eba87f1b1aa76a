// Percentiles by linear interpolation between closest ranks (numpy's default, as vLLM's benchmarks use).
#include "bench/latency_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace pagoda::bench {

LatencySummary LatencySummary::of(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = int64_t(samples.size());
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(samples.size());
  auto at = [&](double q) {
    const double rank = q * double(samples.size() - 1);
    const size_t lo = size_t(rank);
    const size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (samples[hi] - samples[lo]) * (rank - double(lo));
  };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  s.max = samples.back();
  return s;
}

std::string latency_summary_json(const LatencySummary& s) {
  return fmt::format("{{\"count\":{},\"mean\":{:.3f},\"p50\":{:.3f},\"p90\":{:.3f},\"p99\":{:.3f},\"max\":{:.3f}}}",
                     s.count, s.mean, s.p50, s.p90, s.p99, s.max);
}

}  // namespace pagoda::bench
