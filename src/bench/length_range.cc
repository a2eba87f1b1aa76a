// Parsing "N" and "A-B".
#include "bench/length_range.h"

#include <fmt/format.h>

#include <charconv>

namespace pagoda::bench {
namespace {

bool parse_int(std::string_view s, int32_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<LengthRange> LengthRange::parse(std::string_view text, std::string_view what) {
  LengthRange r;
  const size_t dash = text.find('-');
  const bool ok = dash == std::string_view::npos
                      ? parse_int(text, r.min) && (r.max = r.min, true)
                      : parse_int(text.substr(0, dash), r.min) && parse_int(text.substr(dash + 1), r.max);
  if (!ok || r.min < 1 || r.max < r.min)
    return make_error(fmt::format("{} must be N or A-B with 1 <= A <= B, got '{}'", what, text));
  return r;
}

std::string LengthRange::to_string() const {
  return min == max ? fmt::format("{}", min) : fmt::format("{}-{}", min, max);
}

}  // namespace pagoda::bench
