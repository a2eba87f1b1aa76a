// prefill_budget_with_decodes: how many prompt tokens a step may compute while sequences decode, the scheduler's
// one latency decision. A step's time is every decoding stream's next inter-token gap, and on a CPU it grows with
// the step's tokens, so each prompt token a step takes delays the streams; a prompt starved of tokens waits for its
// first one. The policy, from the step-cost model fitted online (StepCostModel: fixed + per-token cost):
// - the step may take as many prompt tokens as keep it within the TPOT target: --tpot-slo, or by default
//   kDefaultStepSlowdown times what the decode-only step would cost;
// - when the earliest prompt (the oldest waiting or still prefilling: arrival order is deadline order, every
//   request having the same --ttft-slo) would miss its TTFT deadline at that pace but can still meet it, the step
//   takes what meeting it needs; a deadline already out of reach does not slow the streams down;
// - at least kMinPrefillTokensWithDecodes (prompts always progress) and never more than the step budget; decodes
//   always keep their token (the scheduler schedules them first).
// The engine fits the model at creation from a few forward passes (Engine::calibrate_step_time); until it is
// fitted (should those not fit it, until steps of different sizes have run) the rule is the fixed one:
// max(decoding, kMinPrefillTokensWithDecodes). An explicit max_prefill_tokens_with_decodes overrides all of it. Pure.
#pragma once

#include <cstdint>

#include "spec/draft_length.h"

namespace pagoda {

inline constexpr double kDefaultStepSlowdown = 3.0;

struct PrefillBudgetInputs {
  int32_t num_decoding = 0;  // sequences decoding this step (each computes one token, drafts aside)
  int32_t max_batched_tokens = 0;
  int32_t configured_cap = -1;  // SchedulerConfig::max_prefill_tokens_with_decodes (kAutoPrefillCap: this policy)
  double tpot_slo_us = 0.0;     // 0: kDefaultStepSlowdown x the decode-only step
  double ttft_slo_us = 0.0;     // 0: none
  const StepCostModel* step_cost = nullptr;  // wall time of steps; nullptr or unfitted: the fixed rule
  int32_t urgent_prompt_tokens = 0;  // the earliest prompt's tokens still to compute (0: no prompt waits)
  double urgent_time_left_us = 0.0;  // until its TTFT deadline (arrival + ttft_slo_us)
};

int32_t prefill_budget_with_decodes(const PrefillBudgetInputs& in);

}  // namespace pagoda
