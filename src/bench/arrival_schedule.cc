// Gamma-distributed request gaps (exponential when burstiness is 1).
#include "bench/arrival_schedule.h"

#include <cassert>
#include <cmath>
#include <random>

namespace pagoda::bench {

std::vector<double> arrival_offsets_s(int32_t num_requests, double request_rate, double burstiness, uint64_t seed) {
  assert(request_rate > 0.0 && burstiness > 0.0);
  std::vector<double> offsets(static_cast<size_t>(std::max(num_requests, 0)), 0.0);
  if (std::isinf(request_rate)) return offsets;
  // Mean gap = shape * scale = 1 / rate; the coefficient of variation is 1 / sqrt(shape).
  std::gamma_distribution<double> gap_s(burstiness, 1.0 / (request_rate * burstiness));
  std::mt19937_64 rng(seed);
  double t = 0.0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = t;
    t += gap_s(rng);
  }
  return offsets;
}

}  // namespace pagoda::bench
