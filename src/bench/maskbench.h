// MaskBench (guidance-ai/jsonschemabench, maskbench/): its files (a JSON schema with valid and invalid instances)
// run through the grammar module as its runner does: compile each schema (properties in any order, since a valid
// document may list them in any), then per instance serialize the data as
// Python's json.dumps does, tokenize it, and walk the matcher token by token, timing each mask computation and
// token commit. Counts per category and overall (passing, compile errors, timeouts, validation errors: a valid
// instance rejected; invalidation errors: an invalid instance accepted), the time to first mask and per mask, and the
// slowest schemas by each.
// Reads the files; does not fetch them. Single-threaded, as MaskBench runs each engine; times and the time limit are
// the thread's CPU time, so that other processes on the machine do not inflate them.
#pragma once

#include <pagoda/status.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

// Python's json.dumps(value) with its default separators (", ", ": ") and ensure_ascii=False: the text MaskBench
// tokenizes for an instance.
std::string python_json_dumps(const nlohmann::ordered_json& value);

// A file's category: its name before "---" (Github_easy---o1.json), else without the trailing "_N.json"
// (BFCL_simple_12.json).
std::string maskbench_category(const std::string& file_name);

enum class MaskbenchOutcome {
  kPassing,            // compiled; every valid instance accepted, every invalid one rejected
  kCompileError,       // the schema was refused (the reason is kept)
  kTimeout,            // compiling or walking the instances took longer than the limit
  kValidationError,    // a valid instance was rejected (and no invalid one accepted)
  kInvalidationError,  // an invalid instance was accepted
};
std::string_view outcome_name(MaskbenchOutcome outcome);

struct MaskbenchSchemaResult {
  std::string file;
  std::string category;
  MaskbenchOutcome outcome = MaskbenchOutcome::kPassing;
  std::string detail;  // the compile error, or which instance failed and at which token
  double ttfm_us = 0;  // compile plus the first mask (0 when it did not compile)
  int32_t num_tests = 0;
  // Invalid instances whose every token passed the mask but that did not end in a complete document: MaskBench
  // counts them as accepted (its runner never asks whether the grammar can end), and so does this harness.
  int32_t num_invalid_accepted_as_prefix = 0;
  std::vector<double> mask_us;  // each token's mask computation and commit
  // Objects whose properties the grammar keeps in `properties` order, over the any-order budget (see
  // grammar::JsonGrammarOptions::any_property_order): a valid instance listing them otherwise is rejected.
  int32_t objects_schema_order = 0;
};

struct MaskbenchOptions {
  double time_limit_s = 30;  // per schema: compile plus every instance
  int32_t num_slowest = 10;  // the slowest schemas listed by each time
};

// One MaskBench file (its text); `file` names it in the result. A file that is not MaskBench's format is an error.
Result<MaskbenchSchemaResult> run_maskbench_file(const Tokenizer& tokenizer,
                                                 const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
                                                 const std::string& file, const std::string& text,
                                                 const MaskbenchOptions& options);

struct MaskbenchPercentiles {
  int64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, p100 = 0;
};
MaskbenchPercentiles maskbench_percentiles(std::vector<double> samples);

struct MaskbenchTally {
  int32_t schemas = 0, passing = 0, compile_errors = 0, timeouts = 0, validation_errors = 0,
          invalidation_errors = 0;
  int32_t tests = 0, invalid_accepted_as_prefix = 0;
  int32_t schema_order_schemas = 0, schema_order_validation_errors = 0;  // objects_schema_order > 0
  MaskbenchPercentiles ttfm_us, mask_us;
};

struct MaskbenchReport {
  int32_t vocab_size = 0;
  std::map<std::string, MaskbenchTally> categories;
  MaskbenchTally total;
  std::map<std::string, int32_t> compile_error_reasons;  // the most frequent refusals, by message
  std::vector<MaskbenchSchemaResult> failures;           // every schema that did not pass (no mask times)
  // The schemas to profile first: the MaskbenchOptions::num_slowest slowest by time to first mask, and by their
  // slowest mask (us, file).
  std::vector<std::pair<double, std::string>> slowest_ttfm, slowest_mask;
};

// Every *.json file in `dir`, in name order. Errors: `dir` is not a readable folder or holds no *.json file; a file
// that is not MaskBench's format.
Result<MaskbenchReport> run_maskbench(const Tokenizer& tokenizer, const std::string& dir,
                                      const MaskbenchOptions& options);

std::string maskbench_report_text(const MaskbenchReport& report);
std::string maskbench_report_json(const MaskbenchReport& report);

}  // namespace pagoda::bench
