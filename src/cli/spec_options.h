// Speculative decoding flags, shared by every subcommand that runs the Engine (run, serve, the engine
// benchmarks): --spec METHOD, --spec-tokens K, --spec-fixed, --spec-ngram-min/max, --spec-ngram-corpus,
// --spec-ngram-history, --draft-model, --draft-kv-blocks, what they load (the draft model, the corpus's n-gram table)
// and their one resolution into an EngineConfig.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_config.h"
#include "loader/loaded_model.h"
#include "spec/ngram_table.h"

namespace pagoda::cli {

struct SpecCliOptions {
  std::string method = "none";       // none | ngram | draft
  int32_t num_tokens = 4;            // drafts verified per step at most (with a method)
  std::optional<int32_t> ngram_min;  // --spec ngram only (default 1)
  std::optional<int32_t> ngram_max;  // --spec ngram only (default 4)
  bool fixed_length = false;         // --spec-fixed: every draft the drafter has, no adaptive length
  std::string ngram_corpus;          // --spec ngram: a text file whose n-grams draft too
  int64_t ngram_history = 0;         // --spec ngram: n-grams learned from finished outputs (0: none)
  std::string draft_model;           // --spec draft: a GGUF or HF folder, or "bundled"
  int32_t draft_kv_blocks = 0;
  std::string cache_type_k_draft;    // --spec draft: the draft's K type (default f16)
  std::string cache_type_v_draft;    // --spec draft: the draft's V type (default f16)
};

void add_spec_options(CLI::App& app, SpecCliOptions& options);

// What the flags load; it must outlive every engine configured with it (the config borrows both).
struct SpecResources {
  std::unique_ptr<LoadedModel> draft;  // --spec draft's model, else null
  std::unique_ptr<NgramTable> corpus;  // --spec-ngram-corpus's n-grams, else null
};
// Loads them (the draft model with the best kernels; the corpus text through the target's tokenizer, line by line,
// up to the table's bound: start-up says where a larger file was cut) and prints the start-up line naming each.
// Errors: an unreadable file or model.
Result<SpecResources> load_spec_resources(const SpecCliOptions& options, const Tokenizer& target_tokenizer);
// Sets config.spec and config.scheduler.num_speculative_tokens, pointing at `resources` (from load_spec_resources).
// Errors: an unknown method, a count out of range, a method's flags without it.
Status apply_spec_options(const SpecCliOptions& options, EngineConfig& config, const SpecResources& resources);
// "off", or e.g. "ngram, up to 4 tokens (adaptive), n-grams 1..4".
std::string describe_spec(const EngineConfig& config);

}  // namespace pagoda::cli
