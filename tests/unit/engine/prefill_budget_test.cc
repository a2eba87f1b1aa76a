// The prefill budget policy on synthetic step-cost models (no model, no clock): the TPOT target bounds a mixed
// step's predicted time, the default is kDefaultStepSlowdown x the decode-only step, a prompt about to miss its
// TTFT deadline gets what meeting it needs (and a lost cause does not), prompts always progress, an explicit cap
// wins, and before the model is fitted the fixed rule holds. Then the Scheduler's decisions with that model.
#include "engine/prefill_budget.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/scheduler_config.h"

namespace pagoda {
namespace {

// Steps of 1..40 tokens costing exactly fixed + per_token * n (microseconds).
StepCostModel model(double fixed_us, double per_token_us) {
  StepCostModel m(1.0);
  for (int n = 1; n <= 40; ++n) m.record(n, fixed_us + per_token_us * n);
  EXPECT_TRUE(m.fitted());
  EXPECT_NEAR(m.fixed_us(), fixed_us, 1e-6 * fixed_us + 1e-6);
  EXPECT_NEAR(m.per_token_us(), per_token_us, 1e-6 * per_token_us);
  return m;
}

PrefillBudgetInputs inputs(const StepCostModel* m, int32_t num_decoding) {
  PrefillBudgetInputs in;
  in.num_decoding = num_decoding;
  in.max_batched_tokens = 512;
  in.configured_cap = kAutoPrefillCap;
  in.step_cost = m;
  return in;
}

// The predicted time of a step of d decodes and p prompt tokens.
double step_us(const StepCostModel& m, int32_t d, int32_t p) { return m.fixed_us() + m.per_token_us() * (d + p); }

TEST(PrefillBudgetTest, ByDefaultAMixedStepCostsAtMostTheSlowdownTimesADecodeOnlyOne) {
  // A memory-bound decode (TinyLlama-like on 2 cores: 15 ms fixed, 3 ms a token).
  const StepCostModel m = model(15000, 3000);
  for (int32_t d : {1, 2, 4, 8}) {
    const int32_t p = prefill_budget_with_decodes(inputs(&m, d));
    EXPECT_LE(step_us(m, d, p), kDefaultStepSlowdown * step_us(m, d, 0) + 1e-6) << d;
    EXPECT_GT(step_us(m, d, p + 1), kDefaultStepSlowdown * step_us(m, d, 0)) << d;  // the most that fits
  }
  // The fixed rule gave 4 tokens to a lone stream's steps; the time-based one gives 12 here.
  EXPECT_EQ(prefill_budget_with_decodes(inputs(&m, 1)), 12);
}

TEST(PrefillBudgetTest, ATpotTargetBoundsTheStepAndPromptsStillProgress) {
  const StepCostModel m = model(15000, 3000);
  PrefillBudgetInputs in = inputs(&m, 2);
  in.tpot_slo_us = 60000;
  EXPECT_EQ(prefill_budget_with_decodes(in), 13);  // 15 + 3 x (2 + 13) = 60 ms
  in.tpot_slo_us = 18000;                           // tighter than the decode-only step (21 ms)
  EXPECT_EQ(prefill_budget_with_decodes(in), kMinPrefillTokensWithDecodes);
  in.tpot_slo_us = 1e9;  // never more than the step budget
  EXPECT_EQ(prefill_budget_with_decodes(in), 512);
}

TEST(PrefillBudgetTest, APromptAboutToMissItsTtftGetsWhatMeetingItNeeds) {
  const StepCostModel m = model(15000, 3000);
  PrefillBudgetInputs in = inputs(&m, 2);
  in.tpot_slo_us = 30000;  // 3 prompt tokens fit; the floor gives 4
  ASSERT_EQ(prefill_budget_with_decodes(in), kMinPrefillTokensWithDecodes);
  in.ttft_slo_us = 2e6;
  in.urgent_prompt_tokens = 128;
  in.urgent_time_left_us = 0.8e6;
  const int32_t p = prefill_budget_with_decodes(in);
  // 128 tokens at p a step, each step 15 + 3 (2 + p) ms, fit in 0.8 s; at p - 1 they would not.
  EXPECT_EQ(p, 7);
  EXPECT_LE(128.0 / p * step_us(m, 2, p), 0.8e6);
  EXPECT_GT(128.0 / (p - 1) * step_us(m, 2, p - 1), 0.8e6);
  // Plenty of time: the TPOT target's pace.
  in.urgent_time_left_us = 60e6;
  EXPECT_EQ(prefill_budget_with_decodes(in), 4);
  // Out of reach even with whole-budget steps (128 x 3 ms > 0.3 s), or past: the streams are not slowed for it.
  in.urgent_time_left_us = 0.3e6;
  EXPECT_EQ(prefill_budget_with_decodes(in), 4);
  in.urgent_time_left_us = -1e6;
  EXPECT_EQ(prefill_budget_with_decodes(in), 4);
  // Without a TTFT target, deadlines are not looked at.
  in.ttft_slo_us = 0;
  in.urgent_time_left_us = 0.8e6;
  EXPECT_EQ(prefill_budget_with_decodes(in), 4);
}

TEST(PrefillBudgetTest, BeforeTheModelIsFittedTheFixedRuleAndAnExplicitCapWins) {
  const StepCostModel unfitted;
  EXPECT_EQ(prefill_budget_with_decodes(inputs(&unfitted, 1)), kMinPrefillTokensWithDecodes);
  EXPECT_EQ(prefill_budget_with_decodes(inputs(&unfitted, 9)), 9);
  EXPECT_EQ(prefill_budget_with_decodes(inputs(nullptr, 9)), 9);
  const StepCostModel m = model(15000, 3000);
  PrefillBudgetInputs in = inputs(&m, 2);
  in.configured_cap = 7;
  in.tpot_slo_us = 1e9;
  EXPECT_EQ(prefill_budget_with_decodes(in), 7);
  in.configured_cap = 0;  // 0: the whole step budget
  EXPECT_EQ(prefill_budget_with_decodes(in), 512);
}

TEST(PrefillBudgetTest, AComputeBoundModelGetsFewerPromptTokensForTheSameSlowdown) {
  // Decode dominated by per-token work (a small model in cache): each prompt token costs as much as a decode.
  const StepCostModel cheap_fixed = model(500, 1000);
  const StepCostModel heavy_fixed = model(20000, 1000);
  EXPECT_LT(prefill_budget_with_decodes(inputs(&cheap_fixed, 4)), prefill_budget_with_decodes(inputs(&heavy_fixed, 4)));
}

}  // namespace
}  // namespace pagoda
