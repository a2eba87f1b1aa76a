// Reading speculative decoding's counters out of Prometheus text.
#include "bench/spec_metrics.h"

#include <fmt/format.h>

#include <cstdlib>

namespace pagoda::bench {
namespace {

// The metric name of a sample line without its prefix ("pagoda:" / "vllm:") and labels; empty for comments.
std::string_view bare_name(std::string_view line) {
  if (line.empty() || line.front() == '#') return {};
  const size_t end = line.find_first_of("{ ");
  std::string_view name = line.substr(0, end);
  if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) name.remove_prefix(colon + 1);
  return name;
}

double sample_value(std::string_view line) {
  const size_t close = line.rfind('}');
  const size_t space = line.find(' ', close == std::string_view::npos ? 0 : close);
  if (space == std::string_view::npos) return 0.0;
  const std::string value(line.substr(space + 1));
  return std::strtod(value.c_str(), nullptr);
}

}  // namespace

std::optional<SpecDecodeCounters> parse_spec_decode_counters(std::string_view text) {
  SpecDecodeCounters c;
  bool found = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const std::string_view name = bare_name(line);
    double* into = name == "spec_decode_num_drafts_total"            ? &c.num_drafts
                   : name == "spec_decode_num_draft_tokens_total"    ? &c.num_draft_tokens
                   : name == "spec_decode_num_accepted_tokens_total" ? &c.num_accepted_tokens
                                                                     : nullptr;
    if (into == nullptr) continue;
    *into += sample_value(line);
    found = true;
  }
  if (!found) return std::nullopt;
  return c;
}

std::string describe_spec_decode(const SpecDecodeCounters& before, const SpecDecodeCounters& after) {
  const double drafts = after.num_drafts - before.num_drafts;
  const double draft_tokens = after.num_draft_tokens - before.num_draft_tokens;
  const double accepted = after.num_accepted_tokens - before.num_accepted_tokens;
  if (draft_tokens <= 0) return "speculative decoding: no drafts verified during the run";
  return fmt::format(
      "speculative decoding: {:.0f} of {:.0f} drafts accepted ({:.1f} %), {:.2f} tokens per verifying step", accepted,
      draft_tokens, 100.0 * accepted / draft_tokens, drafts > 0 ? 1.0 + accepted / drafts : 0.0);
}

}  // namespace pagoda::bench
