// run_prefix_bench: what the prefix cache buys a follow-up request. Each round makes a fresh random prefix of
// `prefix_len` tokens; a first request sends it plus `suffix_len` tokens of its own, and when it is done a
// second request sends the same prefix plus `suffix_len` different tokens. Both generate one token, so their
// TTFT is the whole cost of their prompt. The ratio of the mean TTFTs is the figure.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct PrefixOptions {
  int32_t prefix_len = 1024;  // BOS included
  int32_t suffix_len = 16;
  int32_t num_rounds = 3;
  uint64_t seed = 1;
};

struct PrefixReport {
  int32_t num_rounds = 0;
  double first_ttft_ms = 0.0;         // mean over rounds
  double second_ttft_ms = 0.0;        // mean over rounds
  double ttft_ratio = 0.0;            // first / second
  double second_cached_tokens = 0.0;  // mean prompt tokens of the second request served by the cache
};

Result<PrefixReport> run_prefix_bench(Engine& engine, const Tokenizer& tokenizer, const PrefixOptions& options);
std::string prefix_report_text(const PrefixReport& report);
std::string prefix_report_json(const PrefixReport& report);

}  // namespace pagoda::bench
