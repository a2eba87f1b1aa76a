// The prefill budget policy (prefill_budget.h).
#include "engine/prefill_budget.h"

#include <algorithm>
#include <cmath>

#include "engine/scheduler_config.h"

namespace pagoda {

int32_t prefill_budget_with_decodes(const PrefillBudgetInputs& in) {
  if (in.configured_cap != kAutoPrefillCap) return in.configured_cap > 0 ? in.configured_cap : in.max_batched_tokens;
  const int32_t floor_rule = std::max(in.num_decoding, kMinPrefillTokensWithDecodes);
  if (in.step_cost == nullptr || !in.step_cost->fitted()) return std::min(floor_rule, in.max_batched_tokens);
  const double fixed = in.step_cost->fixed_us();
  const double per_token = in.step_cost->per_token_us();
  const double decode_step = fixed + per_token * double(in.num_decoding);
  const double target = in.tpot_slo_us > 0.0 ? in.tpot_slo_us : kDefaultStepSlowdown * decode_step;
  double p = std::floor((target - decode_step) / per_token + 1e-6);  // 1e-6: a fit's rounding is not a token
  if (in.ttft_slo_us > 0.0 && in.urgent_prompt_tokens > 0 && in.urgent_time_left_us > 0.0) {
    // At p tokens a step, the prompt needs T / p steps of fixed + c (d + p) each: within the time left L when
    // p >= T (fixed + c d) / (L - T c). Beyond reach (L <= T c: even whole-budget steps are too slow) it is left.
    const double t = double(in.urgent_prompt_tokens);
    const double left = in.urgent_time_left_us;
    if (left > t * per_token) p = std::max(p, std::ceil(t * decode_step / (left - t * per_token) - 1e-6));
  }
  p = std::clamp(p, double(kMinPrefillTokensWithDecodes), double(in.max_batched_tokens));
  return int32_t(p);
}

}  // namespace pagoda
