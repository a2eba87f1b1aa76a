// Structured-output benchmark: the time of GrammarMatcher::fill_mask per token on a tokenizer's vocabulary, while
// realistic documents (each case's instances, tokenized by the tokenizer itself) are fed through the matcher, as a
// model's output would be. Cold: the first document with a freshly compiled grammar (per-state masks are built
// on first use); warm: later documents with the same compiled grammar (the server's cache hit). Also the compile
// time and the per-state mask cache's size. Measures the grammar module only (no model).
#pragma once

#include <pagoda/status.h>

#include <string>
#include <vector>

#include "grammar/grammar_spec.h"
#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct StructuredCase {
  std::string name;
  grammar::GrammarSpec spec;
  std::vector<std::string> instances;  // documents the grammar accepts
};

// JSON schemas (a record with nested objects and formats, tool-call arguments, an array of products, a
// recursive tree), json_object, llama.cpp's json.gbnf, a regex; with hand-written instances.
std::vector<StructuredCase> default_structured_cases();

// The tokenizer's own tokens for `text` when they spell it exactly (byte-level BPE), else a greedy longest-match
// over the vocabulary (SentencePiece adds a leading space that a grammar would refuse); empty when the vocabulary
// cannot spell `text`.
std::vector<TokenId> tokens_for_text(const Tokenizer& tokenizer, const grammar::TokenVocabulary& vocab,
                                     const std::string& text);

struct MaskTimeStats {
  int64_t count = 0;
  double p50_us = 0, p99_us = 0, mean_us = 0, max_us = 0;
};

struct StructuredCaseReport {
  std::string name;
  double compile_ms = 0;
  size_t num_grammar_states = 0;
  int64_t num_tokens = 0;  // over one pass of the instances
  MaskTimeStats cold, warm;
  size_t num_state_masks = 0;  // built by the end
  size_t state_mask_bytes = 0;
};

struct StructuredBenchReport {
  int32_t vocab_size = 0;
  double vocab_build_ms = 0;
  std::vector<StructuredCaseReport> cases;
  MaskTimeStats all_warm;  // every warm mask of every case
};

// `num_warm_passes` passes over each case's instances after the cold one. Errors: a case that does not compile,
// an instance the grammar refuses.
Result<StructuredBenchReport> run_structured_bench(const Tokenizer& tokenizer, const std::vector<StructuredCase>& cases,
                                                   int32_t num_warm_passes);

std::string structured_report_text(const StructuredBenchReport& report);
std::string structured_report_json(const StructuredBenchReport& report);

}  // namespace pagoda::bench
