// Speculative decoding's counters as a server's /metrics exposes them (pagoda's pagoda:spec_decode_* or vLLM's
// vllm:spec_decode_*), read before and after a `bench serve` run so the run's acceptance can be reported next to
// its latencies. A plain value and a pure parser of Prometheus text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::bench {

struct SpecDecodeCounters {
  double num_drafts = 0;  // sequence-steps that verified drafts
  double num_draft_tokens = 0;
  double num_accepted_tokens = 0;
};

// The spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total samples (summed over their label sets), or
// nullopt when the text has none of them (speculation off, or another server).
std::optional<SpecDecodeCounters> parse_spec_decode_counters(std::string_view prometheus_text);

// "speculative decoding: 812 of 1,950 drafts accepted (41.6 %), 2.21 tokens per verifying step" for the counts
// between two readings.
std::string describe_spec_decode(const SpecDecodeCounters& before, const SpecDecodeCounters& after);

}  // namespace pagoda::bench
