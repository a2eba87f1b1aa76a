// Histogram: bucket search and the locked counts.
#include "metrics/histogram.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda::metrics {

Histogram::Histogram(std::vector<double> upper_bounds) {
  for (size_t i = 1; i < upper_bounds.size(); ++i)
    PAGODA_CHECK(upper_bounds[i - 1] < upper_bounds[i], "histogram bounds must ascend (bound {} is {} after {})", i,
                 upper_bounds[i], upper_bounds[i - 1]);
  data_.bucket_counts.assign(upper_bounds.size() + 1, 0);
  data_.upper_bounds = std::move(upper_bounds);
}

void Histogram::observe(double value) {
  // Prometheus buckets are "le": a value equal to a bound belongs to that bound's bucket.
  const size_t idx = size_t(std::lower_bound(data_.upper_bounds.begin(), data_.upper_bounds.end(), value) -
                            data_.upper_bounds.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++data_.bucket_counts[idx];
  data_.sum += value;
  ++data_.count;
}

HistogramSnapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_;
}

}  // namespace pagoda::metrics
