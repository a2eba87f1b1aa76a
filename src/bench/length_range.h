// LengthRange: a token count that is either fixed ("128"), drawn uniformly from a range ("64-512") per request,
// or drawn log-uniformly ("log:10-256": as many requests in 10-20 as in 128-256, so mostly short with a long
// tail, the shape of chat replies), as benchmark workloads mix prompt and output lengths. A plain value.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace pagoda::bench {

struct LengthRange {
  int32_t min = 0;
  int32_t max = 0;
  bool log_uniform = false;

  // "N", "A-B" or "log:A-B" with 1 <= A <= B; `what` names the flag in errors.
  static Result<LengthRange> parse(std::string_view text, std::string_view what);
  int32_t draw(std::mt19937_64& rng) const;
  std::string to_string() const;
};

}  // namespace pagoda::bench
