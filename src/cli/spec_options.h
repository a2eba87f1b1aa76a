// Speculative decoding flags, shared by every subcommand that runs the Engine (run, serve, the engine
// benchmarks): --spec METHOD, --spec-tokens K, --spec-fixed, --spec-ngram-min/max, --draft-model,
// --draft-kv-blocks, the draft model's loading and their one resolution into an EngineConfig.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_config.h"
#include "loader/loaded_model.h"

namespace pagoda::cli {

struct SpecCliOptions {
  std::string method = "none";       // none | ngram | draft
  int32_t num_tokens = 4;            // drafts verified per step at most (with a method)
  std::optional<int32_t> ngram_min;  // --spec ngram only (default 1)
  std::optional<int32_t> ngram_max;  // --spec ngram only (default 4)
  bool fixed_length = false;         // --spec-fixed: every draft the drafter has, no adaptive length
  std::string draft_model;           // --spec draft: a GGUF or HF folder, or "bundled"
  int32_t draft_kv_blocks = 0;
};

void add_spec_options(CLI::App& app, SpecCliOptions& options);
// The draft model `--spec draft` names (null without it), loaded with the best kernels; it must outlive every
// engine configured with it. Prints the start-up line naming it.
Result<std::unique_ptr<LoadedModel>> load_draft_model(const SpecCliOptions& options);
// Sets config.spec and config.scheduler.num_speculative_tokens, with `draft` (from load_draft_model) for --spec
// draft. Errors: an unknown method, a count out of range, draft flags without --spec draft.
Status apply_spec_options(const SpecCliOptions& options, EngineConfig& config, const LoadedModel* draft = nullptr);
// "off", or e.g. "ngram, up to 4 tokens (adaptive), n-grams 1..4".
std::string describe_spec(const EngineConfig& config);

}  // namespace pagoda::cli
