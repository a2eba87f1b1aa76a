// Speculative decoding flags, shared by every subcommand that runs the Engine (run, serve, the engine
// benchmarks): --spec METHOD, --spec-tokens K, --spec-fixed, --spec-ngram-min/max, and their one resolution
// into an EngineConfig.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "engine/engine_config.h"

namespace pagoda::cli {

struct SpecCliOptions {
  std::string method = "none";  // none | ngram
  int32_t num_tokens = 4;       // drafts verified per step at most (with a method)
  int32_t ngram_min = 1;
  int32_t ngram_max = 4;
  bool fixed_length = false;  // --spec-fixed: every draft the drafter has, no adaptive length
};

void add_spec_options(CLI::App& app, SpecCliOptions& options);
// Sets config.spec and config.scheduler.num_speculative_tokens. Errors: an unknown method, a count out of range.
Status apply_spec_options(const SpecCliOptions& options, EngineConfig& config);
// "off", or e.g. "ngram, up to 4 tokens (adaptive), n-grams 1..4".
std::string describe_spec(const EngineConfig& config);

}  // namespace pagoda::cli
