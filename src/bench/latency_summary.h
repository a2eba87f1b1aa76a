// LatencySummary: mean and percentiles of a list of samples (ms or s, whatever they were recorded in), as the
// serving benchmarks report them. A plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::bench {

struct LatencySummary {
  int64_t count = 0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;

  // Nearest-rank percentiles over a copy of `samples`; all zero when empty.
  static LatencySummary of(std::vector<double> samples);
};

// {"count":N,"mean":..,"p50":..,"p90":..,"p99":..,"max":..} with 3 decimals, for the benchmarks' --json.
std::string latency_summary_json(const LatencySummary& summary);

}  // namespace pagoda::bench
