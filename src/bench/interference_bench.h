// run_interference_bench: how much a long prompt arriving disturbs streams that are already decoding (the case
// chunked prefill is for). `num_streams` short requests start decoding; after each has `warmup_tokens`, one
// request with a `long_prompt_len`-token prompt arrives; once it has its first token the streams decode
// `tail_tokens` more and are cancelled. Every inter-token latency of the streams is a sample: the p99/p50
// ratio says how far the long prefill made them stutter, and the p99 of those during the prefill over the p50
// of those outside it says how much slower they ran than undisturbed (the stricter figure when the prefill is
// spread over many steps, which moves the overall p50 too).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>

#include "bench/latency_summary.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct InterferenceOptions {
  int32_t num_streams = 4;
  int32_t stream_prompt_len = 32;
  int32_t long_prompt_len = 1024;
  int32_t warmup_tokens = 32;
  int32_t tail_tokens = 32;
  uint64_t seed = 1;
};

struct InterferenceReport {
  LatencySummary itl_ms;              // every inter-token latency of the streams
  LatencySummary during_itl_ms;       // those whose interval overlaps the long prompt's prefill
  LatencySummary undisturbed_itl_ms;  // the others: before the long prompt arrived or after its first token
  double itl_p99_over_p50 = 0.0;
  double during_p99_over_undisturbed_p50 = 0.0;
  double long_ttft_ms = 0.0;
  int64_t num_steps = 0;  // engine steps the run took
  // The prefill budget's decisions (engine/prefill_budget.h) over the run: steps while streams decoded, those that
  // also took prompt tokens, the last budget, and the step-time model (0 until fitted).
  int64_t num_steps_with_decodes = 0;
  int64_t num_mixed_steps = 0;
  int32_t last_prefill_budget = -1;
  double step_fixed_ms = 0.0;
  double step_per_token_ms = 0.0;
};

Result<InterferenceReport> run_interference_bench(Engine& engine, const Tokenizer& tokenizer,
                                                  const InterferenceOptions& options);
std::string interference_report_text(const InterferenceReport& report);
std::string interference_report_json(const InterferenceReport& report);

}  // namespace pagoda::bench
