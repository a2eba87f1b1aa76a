// EngineStats: a snapshot of the engine's figures for /metrics, logs and benchmarks, taken after a step.
// Counters count since start. A plain value.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kv/kv_cache_stats.h"

namespace pagoda {

// Upper bounds of the buckets of EngineStats::prefill_tokens_per_decode_step (a last bucket holds the rest).
inline constexpr std::array<int32_t, 12> kPrefillTokensPerStepBounds = {0,   1,   4,   16,   32,   64,
                                                                        128, 256, 512, 1024, 2048, 4096};

struct EngineStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;       // the scheduler's queue plus submissions not yet picked up
  int32_t peak_num_running = 0;  // the most sequences one step has run, since start
  KvCacheStats kv;
  float kv_usage = 0.0f;             // used / total blocks
  int32_t peak_num_used_blocks = 0;  // the most KV blocks a step has held once scheduled, since start
  int64_t num_steps = 0;
  int64_t num_preemptions = 0;
  int64_t num_prompt_tokens = 0;  // prompt tokens of finished and running requests, counted at admission
  // Prompt positions the forward passes computed: prefill work (prefix-cache hits not included; a recompute
  // after a preemption counted again).
  int64_t num_prefill_tokens = 0;
  int64_t num_generation_tokens = 0;  // output tokens sampled
  int64_t num_finished_stop = 0;
  int64_t num_finished_length = 0;
  int64_t num_finished_abort = 0;
  // Speculative decoding, under vLLM's names (spec_decode_*): sequence-steps that verified drafts, drafts
  // verified, drafts accepted, and accepted by position (entry j: drafts j accepted; sized
  // num_speculative_tokens). Acceptance rate = accepted / draft tokens; tokens per verifying step = 1 +
  // accepted / drafts.
  int64_t spec_num_drafts = 0;
  int64_t spec_num_draft_tokens = 0;
  int64_t spec_num_accepted_tokens = 0;
  std::vector<int64_t> spec_num_accepted_tokens_per_pos;
  // The step-cost model's fit (the adaptive draft length's, in wall time): a step of n tokens
  // costs about step_fixed_us + step_per_token_us * n; both 0 until steps of different sizes were seen, or
  // without adaptive speculation.
  double step_fixed_us = 0.0;
  double step_per_token_us = 0.0;
  // The prefill budget's decisions (engine/prefill_budget.h): steps while sequences decoded, those of them that
  // also computed prompt tokens, the last budget (prompt tokens such a step could take; -1 before any), and the
  // wall-time step model behind it (fixed + per token; 0 until fitted).
  int64_t num_steps_with_decodes = 0;
  int64_t num_mixed_steps = 0;
  int32_t last_prefill_budget = -1;
  // Prompt tokens each of those steps computed, as a histogram: steps per bucket (bucket i: at most
  // kPrefillTokensPerStepBounds[i] and more than the bound before; the last: above them all), and their sum.
  std::array<int64_t, kPrefillTokensPerStepBounds.size() + 1> prefill_tokens_per_decode_step{};
  int64_t prefill_tokens_in_decode_steps = 0;
  double step_time_fixed_us = 0.0;
  double step_time_per_token_us = 0.0;
};

}  // namespace pagoda
