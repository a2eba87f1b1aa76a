// Adaptive draft length: how many drafts a sequence should verify in its next step, from how likely its drafts are
// (each draft's own chance where the drafter gives one, else the rate at which its drafts were accepted) and from
// what a draft token costs. With per-draft acceptance rate a (draft j is accepted only after drafts 0..j-1 were,
// each with probability a), k drafts give E(k) = 1 + a + ... + a^k tokens for a step that costs 1 + c * k plain
// decode steps, where c is the marginal cost of one more token relative to the cost per sequence of a plain step.
// The best k maximizes E(k) / (1 + c * k): k = 0 (no speculation) when drafts are rarely accepted or tokens are
// expensive (a compute-bound model, or a large batch whose step is already many tokens), the maximum when they are
// cheap (a memory-bound step, where k + 1 positions cost about one). Pure functions, a sequence's chooser and the
// estimators behind it; no clock, no engine state (the scheduler records what the steps cost).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"

namespace pagoda {

// argmax over k in [0, max_drafts] of E(k) / (1 + marginal_cost * k); the smallest k on ties.
int32_t best_num_drafts(double acceptance_rate, double marginal_cost, int32_t max_drafts);
// The same with a chance of its own for each draft (chances[j]: draft j is accepted once drafts 0..j-1 were), so
// E(k) = 1 + c0 + c0 c1 + ... + c0 ... c(k-1); k in [0, chances.size()].
int32_t best_num_drafts(std::span<const float> chances, double marginal_cost);

// A sequence's per-draft acceptance rate, estimated from its verdicts with exponential forgetting (recent text
// counts more: a story that starts repeating itself should be noticed within a few steps), starting from a
// prior of `prior_rate` worth `prior_weight` verdicts.
class AcceptanceEstimate {
 public:
  static constexpr double kPriorRate = 0.5;
  static constexpr double kPriorWeight = 2.0;
  static constexpr double kDecay = 0.9;  // per recorded step

  // A step verified `num_drafts` drafts and accepted the first `num_accepted` (a rejection ends the walk).
  void record(int32_t num_drafts, int32_t num_accepted);
  double rate() const { return (accepted_ + kPriorRate * kPriorWeight) / (accepted_ + rejected_ + kPriorWeight); }

 private:
  double accepted_ = 0.0;
  double rejected_ = 0.0;
};

// One sequence's adaptive draft length: how many of a step's drafts to verify, and what the verdicts teach. Drafts
// with chances (Drafter::propose) are judged draft by draft, their chances scaled by how this sequence's earlier
// drafts with chances fared against theirs (so a drafter whose chances run high on this text, e.g. a corpus of
// another model's outputs, soon stops being believed); drafts without, by the sequence's acceptance rate. When it
// verifies none, the first draft is kept as a shadow and checked against the token the step samples, so the
// estimates keep learning while speculation is off; and when the first draft looks likelier than not, one is
// verified every kExploreEvery steps anyway: the step-cost fit is refreshed only by steps that verify drafts, and
// one that says drafts cost too much would otherwise hold speculation off for good after a noisy stretch.
class DraftLengthChooser {
 public:
  static constexpr int32_t kExploreEvery = 16;
  static constexpr double kCalibrationPriorDrafts = 2.0;
  static constexpr double kCalibrationDecay = 0.9;  // per recorded step

  // How many of `drafts` (`chances` as many, or empty) the step should verify at `marginal_cost`.
  int32_t choose(std::span<const TokenId> drafts, std::span<const float> chances, double marginal_cost);
  // As many drafts as choose() would verify at the sequence's acceptance rate, for a drafter that pays per draft
  // asked (at least one: a shadow).
  int32_t worth_asking(double marginal_cost, int32_t max_drafts) const;
  // The step verified `num_drafts` drafts (those choose() kept, or all of them without it) and accepted the first
  // `num_accepted`.
  void record_verified(int32_t num_drafts, int32_t num_accepted);
  // The step verified no draft and sampled `token`: checks the shadow, if any.
  void record_sampled(TokenId token);
  // The step's choice will never be verified (the sequence was preempted).
  void forget_step();

  double acceptance_rate() const { return rate_.rate(); }
  // Observed over expected accepted drafts with chances (1 until some were verified).
  double chance_factor() const;
  TokenId shadow() const { return shadow_; }

 private:
  void record_chances(std::span<const float> chances, int32_t num_accepted);

  AcceptanceEstimate rate_;
  double observed_ = 0.0, expected_ = 0.0;  // decayed accepted drafts with chances, and their chances' expectation
  std::vector<float> chosen_chances_;       // of the drafts choose() kept (raw), empty for drafts without
  TokenId shadow_ = -1;
  float shadow_chance_ = -1.0f;  // the shadow's raw chance, or -1: it had none
  int32_t steps_off_ = 0;        // steps in a row that verified no draft
};

// The cost of an engine step as fixed_us + per_token_us * tokens, fitted online by least squares over the
// steps seen, with exponential forgetting. Until the steps seen differ enough in size to separate the two
// terms, `fallback_marginal_cost` stands in for marginal_cost(); after that, steps of one size keep the last fit.
// With `max_over_fit` > 0, a step recorded once the model is fitted counts as at most that many times what the fit
// predicts for it: on a shared machine a wall-clock step that another process interrupted is an outlier a least-
// squares fit would follow far. A lasting change still moves the fit, each step counting up to that factor above
// it (a cost doubled for good: within 10% after about 360 steps at factor 1.5 and decay 0.995, against 320 unclipped).
class StepCostModel {
 public:
  explicit StepCostModel(double decay = 0.995, double fallback_marginal_cost = 0.3, double max_over_fit = 0.0)
      : decay_(decay), fallback_marginal_cost_(fallback_marginal_cost), max_over_fit_(max_over_fit) {}

  void record(int32_t num_tokens, double duration_us);
  // The cost of one more token in a step of `num_seqs` sequences, relative to one sequence's share of a plain
  // step of that many sequences: per_token / (fixed / num_seqs + per_token), in (0, 1].
  double marginal_cost(int32_t num_seqs) const;
  bool fitted() const { return fitted_; }
  double fixed_us() const { return fixed_us_; }
  double per_token_us() const { return per_token_us_; }

 private:
  double decay_;
  double fallback_marginal_cost_;
  double max_over_fit_;
  double w_ = 0.0, sn_ = 0.0, st_ = 0.0, snn_ = 0.0, snt_ = 0.0;  // decayed sums of 1, n, t, n^2, n * t
  bool fitted_ = false;
  double fixed_us_ = 0.0;
  double per_token_us_ = 0.0;
};

}  // namespace pagoda
