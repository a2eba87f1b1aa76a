// arrival_offsets_s: when each request of a serving benchmark is sent, as offsets from the start. Gaps are
// gamma-distributed with shape = burstiness and mean 1 / rate (burstiness 1 is a Poisson process; below 1 is
// burstier, above 1 steadier), as vLLM's serving benchmark draws them. Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::bench {

// `num_requests` offsets in seconds, non-decreasing, the first 0 (the first request goes at once and each gap
// follows a request). An infinite `request_rate` sends everything at 0. Requires rate > 0 and burstiness > 0.
std::vector<double> arrival_offsets_s(int32_t num_requests, double request_rate, double burstiness, uint64_t seed);

}  // namespace pagoda::bench
