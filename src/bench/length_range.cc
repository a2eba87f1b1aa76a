// Parsing "N" and "A-B".
#include "bench/length_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace pagoda::bench {
namespace {

bool parse_int(std::string_view s, int32_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<LengthRange> LengthRange::parse(std::string_view full_text, std::string_view what) {
  LengthRange r;
  std::string_view text = full_text;
  if (text.starts_with("log:")) {
    r.log_uniform = true;
    text.remove_prefix(4);
  }
  const size_t dash = text.find('-');
  const bool ok = dash == std::string_view::npos
                      ? parse_int(text, r.min) && (r.max = r.min, true)
                      : parse_int(text.substr(0, dash), r.min) && parse_int(text.substr(dash + 1), r.max);
  if (!ok || r.min < 1 || r.max < r.min)
    return make_error(fmt::format("{} must be N, A-B or log:A-B with 1 <= A <= B, got '{}'", what, full_text));
  return r;
}

int32_t LengthRange::draw(std::mt19937_64& rng) const {
  if (min == max) return min;
  if (!log_uniform) return std::uniform_int_distribution<int32_t>(min, max)(rng);
  // exp of a uniform draw over [log A, log(B + 1)), floored: every length in [A, B], each decade as likely.
  const double u = std::uniform_real_distribution<double>(std::log(double(min)), std::log(double(max) + 1.0))(rng);
  return std::clamp(int32_t(std::floor(std::exp(u))), min, max);
}

std::string LengthRange::to_string() const {
  if (min == max) return fmt::format("{}", min);
  return fmt::format("{}{}-{}", log_uniform ? "log:" : "", min, max);
}

}  // namespace pagoda::bench
