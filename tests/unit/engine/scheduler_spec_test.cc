// Scheduler with a drafter (speculative decoding), no model: a decoding sequence's drafts join its last token in
// the step (capped by num_speculative_tokens, by what the sequence may still generate, and by the budget, which
// keeps a token for every running sequence after it); without blocks for them it decodes plainly and preempts
// nobody; update() keeps the KV of the accepted drafts, gives back the blocks of the rejected ones, hashes only
// what was accepted, and ends a sequence at an end-of-generation token among them (dropping what follows).
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/scheduler.h"

namespace pagoda {
namespace {

constexpr int32_t kSpecBlockSize = 4;
constexpr TokenId kSpecEos = 2;

// Proposes 100, 101, ... (as many as allowed), remembering how many it was last asked for; a draft model's way
// (each draft paid for), with `chances` for its drafts when set.
class CountingDrafter final : public Drafter {
 public:
  void propose(std::span<const TokenId>, int32_t max_drafts, std::vector<TokenId>& drafts,
               std::vector<float>& draft_chances) override {
    last_asked = max_drafts;
    const int32_t n = chances.empty() ? max_drafts : std::min(max_drafts, int32_t(chances.size()));
    drafts.clear();
    for (int32_t j = 0; j < n; ++j) drafts.push_back(100 + j);
    draft_chances.assign(chances.begin(), chances.begin() + (chances.empty() ? 0 : n));
  }
  bool pays_per_draft() const override { return chances.empty(); }
  int32_t last_asked = -1;
  std::vector<float> chances;
};

class SchedulerSpecTest : public ::testing::Test {
 protected:
  void make(int32_t num_blocks, int32_t max_batched_tokens, int32_t num_speculative_tokens, bool adaptive = false) {
    KvCacheManager::Options o;
    o.num_blocks = num_blocks;
    o.block_size = kSpecBlockSize;
    kv_ = std::make_unique<KvCacheManager>(o);
    SchedulerConfig c;
    c.max_num_seqs = 8;
    c.max_batched_tokens = max_batched_tokens;
    c.max_prefill_tokens_with_decodes = 0;
    c.num_speculative_tokens = num_speculative_tokens;
    c.adaptive_num_speculative_tokens = adaptive;
    scheduler_ = std::make_unique<Scheduler>(c, *kv_, std::vector<TokenId>{kSpecEos}, &drafter_);
  }
  Sequence* add(int32_t prompt_len, int32_t max_tokens = 100) {
    GenerateRequest r;
    r.prompt.resize(size_t(prompt_len));
    std::iota(r.prompt.begin(), r.prompt.end(), 10);
    r.sampling.max_tokens = max_tokens;
    const RequestId id = next_id_++;
    return scheduler_->add(std::make_unique<Sequence>(id, std::move(r), kSpecBlockSize, 1024, uint64_t(id), 0));
  }
  // Runs prompts to their first token (each sampling 7).
  void prefill_all() {
    const SchedulePlan& p = scheduler_->schedule(++now_us_);
    std::vector<SampledToken> t;
    for (const ScheduledSeq& s : p.seqs) {
      ASSERT_TRUE(s.samples);
      t.push_back(SampledToken{s.seq, 7, {}, {}, false});
    }
    scheduler_->update(p, t, ++now_us_);
  }
  // A verifying step's tokens for `seq`: its first `num_accepted` drafts, then `last`.
  static void accept(std::vector<SampledToken>& out, Sequence* seq, int32_t num_accepted, TokenId last) {
    for (int32_t j = 0; j < num_accepted; ++j)
      out.push_back(SampledToken{seq, seq->draft_tokens[size_t(j)], {}, {}, false});
    out.push_back(SampledToken{seq, last, {}, {}, false});
  }

  CountingDrafter drafter_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  RequestId next_id_ = 1;
  int64_t now_us_ = 0;
};

TEST_F(SchedulerSpecTest, DraftsJoinTheDecodeTokenAndOnlyTheAcceptedKeepTheirKv) {
  make(32, 64, 6);
  Sequence* a = add(6);
  prefill_all();  // 7 tokens, 6 computed, 2 blocks
  ASSERT_EQ(a->num_tokens(), 7);
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].first_pos, 6);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 7);  // the last token and 6 drafts
  EXPECT_EQ(p.seqs[0].num_draft_tokens, 6);
  EXPECT_TRUE(p.seqs[0].samples);
  EXPECT_EQ(p.num_draft_tokens, 6);
  EXPECT_EQ(p.num_prefill_tokens, 0);
  EXPECT_EQ(a->draft_tokens, (std::vector<TokenId>{100, 101, 102, 103, 104, 105}));
  EXPECT_EQ(a->kv.num_computed_tokens, 13);
  EXPECT_EQ(a->kv.block_table.num_blocks(), 4);
  EXPECT_EQ(kv_->pool().num_used(), 4);
  // Two drafts accepted, then 9: positions 0..8 keep their KV (the 9 is computed next step); block 3 goes back.
  std::vector<SampledToken> t;
  accept(t, a, 2, 9);
  std::vector<SeqEvent>& events = scheduler_->update(p, t, ++now_us_);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].token, 100);
  EXPECT_EQ(events[1].token, 101);
  EXPECT_EQ(events[2].token, 9);
  EXPECT_EQ(events[2].num_output_tokens, 4);
  EXPECT_TRUE(a->draft_tokens.empty());
  EXPECT_EQ(a->num_tokens(), 10);
  EXPECT_EQ(a->kv.num_computed_tokens, 9);
  EXPECT_EQ(a->kv.block_table.num_blocks(), 3);
  EXPECT_EQ(kv_->pool().num_used(), 3);
  EXPECT_EQ(kv_->stats().num_wasted_slots, 3 * kSpecBlockSize - 9);
  // The two full blocks are hashed from the accepted tokens: a prompt with those 8 tokens finds them.
  EXPECT_EQ(a->kv.block_hashes.size(), 2u);
  const std::vector<TokenId> same(a->tokens.begin(), a->tokens.begin() + 9);
  EXPECT_EQ(kv_->lookup_prefix(same).num_cached_tokens, 8);
  std::vector<TokenId> with_rejected = same;
  with_rejected[7] = 102;  // position 7 held draft 101 (accepted); 102 was rejected at position 8
  EXPECT_EQ(kv_->lookup_prefix(with_rejected).num_cached_tokens, 4);
  // Every draft rejected: only the last token's KV is new.
  const SchedulePlan& p2 = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p2.seqs[0].num_draft_tokens, 6);
  t.clear();
  accept(t, a, 0, 8);
  scheduler_->update(p2, t, ++now_us_);
  EXPECT_EQ(a->num_tokens(), 11);
  EXPECT_EQ(a->kv.num_computed_tokens, 10);
  EXPECT_EQ(kv_->pool().num_used(), 3);
}

TEST_F(SchedulerSpecTest, DraftsStopAtMaxTokensAndLeaveABudgetTokenToEachLaterSequence) {
  make(64, 10, 8);
  Sequence* a = add(3, /*max_tokens=*/4);
  Sequence* b = add(3);
  Sequence* c = add(3);
  prefill_all();
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs.size(), 3u);
  // a: 1 token out, 3 more allowed: the last token and 2 drafts (the third token it may still make is the one
  // the step samples after them).
  EXPECT_EQ(p.seqs[0].seq, a);
  EXPECT_EQ(p.seqs[0].num_draft_tokens, 2);
  // b: budget 10 - 3 = 7, minus 1 for c: 6 tokens, 5 drafts; c: the 1 left.
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].num_draft_tokens, 5);
  EXPECT_EQ(p.seqs[2].seq, c);
  EXPECT_EQ(p.seqs[2].num_new_tokens, 1);
  EXPECT_EQ(p.seqs[2].num_draft_tokens, 0);
  EXPECT_EQ(p.num_batched_tokens, 10);
  // a accepts both drafts and reaches max_tokens with the token after them.
  std::vector<SampledToken> t;
  accept(t, a, 2, 9);
  accept(t, b, 4, 9);
  t.push_back(SampledToken{c, 9, {}, {}, false});
  std::vector<SeqEvent>& events = scheduler_->update(p, t, ++now_us_);
  ASSERT_EQ(events.size(), 9u);
  EXPECT_TRUE(events[2].finished);
  EXPECT_EQ(events[2].finish_reason, FinishReason::kLength);
  EXPECT_EQ(events[2].num_output_tokens, 4);
  EXPECT_EQ(scheduler_->num_running(), 2);
  EXPECT_EQ(b->kv.num_computed_tokens, b->num_tokens() - 1);
}

TEST_F(SchedulerSpecTest, WithoutBlocksForDraftsASequenceDecodesPlainlyAndPreemptsNobody) {
  make(4, 64, 8);
  Sequence* a = add(7);
  Sequence* b = add(7);
  prefill_all();  // each: 8 tokens, 7 computed, 2 blocks: the pool is full
  ASSERT_EQ(kv_->pool().num_free(), 0);
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_TRUE(p.preempted.empty());
  for (const ScheduledSeq& s : p.seqs) {
    EXPECT_EQ(s.num_new_tokens, 1);
    EXPECT_EQ(s.num_draft_tokens, 0);
    EXPECT_TRUE(s.seq->draft_tokens.empty());
  }
  std::vector<SampledToken> t{SampledToken{a, 9, {}, {}, false}, SampledToken{b, 9, {}, {}, false}};
  scheduler_->update(p, t, ++now_us_);
  EXPECT_EQ(a->kv.num_computed_tokens, 8);
}

TEST_F(SchedulerSpecTest, AnEndOfGenerationTokenAmongTheAcceptedEndsTheSequenceThere) {
  make(32, 64, 4);
  Sequence* a = add(5);
  prefill_all();
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs[0].num_draft_tokens, 4);
  a->draft_tokens[1] = kSpecEos;  // as if the drafter had proposed EOS second
  std::vector<SampledToken> t;
  accept(t, a, 3, 9);  // 100, EOS, 102, then 9: the last two never happen
  std::vector<SeqEvent>& events = scheduler_->update(p, t, ++now_us_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].token, kSpecEos);
  EXPECT_TRUE(events[1].finished);
  EXPECT_EQ(events[1].finish_reason, FinishReason::kStop);
  EXPECT_EQ(events[1].num_output_tokens, 3);
  EXPECT_EQ(scheduler_->num_running(), 0);
  EXPECT_EQ(kv_->pool().num_used(), 0);
}

TEST_F(SchedulerSpecTest, AdaptiveLengthDraftsWhenTokensAreCheapAndNotWhenEachCostsAStep) {
  make(64, 64, 6, /*adaptive=*/true);
  Sequence* a = add(5);
  prefill_all();
  // A memory-bound step: 999 us fixed, 1 us per token. At the prior acceptance rate (0.5), all 6 drafts pay.
  for (int i = 0; i < 20; ++i) scheduler_->record_step(i % 2 == 0 ? 1 : 8, i % 2 == 0 ? 1000.0 : 1007.0);
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].num_draft_tokens, 6);
  std::vector<SampledToken> t;
  accept(t, a, 0, 9);  // all rejected: the estimate drops
  scheduler_->update(p, t, ++now_us_);
  EXPECT_LT(a->draft_length.acceptance_rate(), AcceptanceEstimate::kPriorRate);
  // A compute-bound step: every token costs about a step. No draft pays; the first is kept as a shadow.
  for (int i = 0; i < 2000; ++i) scheduler_->record_step(i % 2 == 0 ? 1 : 8, i % 2 == 0 ? 101.0 : 801.0);
  const SchedulePlan& p2 = scheduler_->schedule(++now_us_);
  EXPECT_EQ(p2.seqs[0].num_draft_tokens, 0);
  EXPECT_EQ(p2.seqs[0].num_new_tokens, 1);
  EXPECT_EQ(a->draft_length.shadow(), 100);
  EXPECT_EQ(drafter_.last_asked, 1);  // only the shadow: a draft model would pay a pass for each draft asked
  const double before = a->draft_length.acceptance_rate();
  t.clear();
  t.push_back(SampledToken{a, 100, {}, {}, false});  // the model agreed with the unverified draft
  scheduler_->update(p2, t, ++now_us_);
  EXPECT_GT(a->draft_length.acceptance_rate(), before);
  EXPECT_EQ(a->draft_length.shadow(), -1);
  EXPECT_EQ(a->kv.num_computed_tokens, a->num_tokens() - 1);
}

// A cost fit that holds speculation off is refreshed only by steps that verify drafts: a sequence whose shadow drafts
// keep being right verifies one draft every 16th step, and the other steps none.
TEST_F(SchedulerSpecTest, AdaptiveLengthStillVerifiesADraftNowAndThenWhenDraftsAreRight) {
  make(64, 64, 6, /*adaptive=*/true);
  Sequence* a = add(5, 1000);
  prefill_all();
  for (int i = 0; i < 2000; ++i) scheduler_->record_step(i % 2 == 0 ? 1 : 8, i % 2 == 0 ? 101.0 : 801.0);
  std::vector<int32_t> verified;
  for (int step = 1; step <= 48; ++step) {
    const SchedulePlan& p = scheduler_->schedule(++now_us_);
    ASSERT_EQ(p.seqs.size(), 1u);
    const int32_t num_drafts = p.seqs[0].num_draft_tokens;
    if (num_drafts > 0) verified.push_back(step);
    EXPECT_LE(num_drafts, 1);
    std::vector<SampledToken> t;
    if (num_drafts > 0)
      accept(t, a, num_drafts, 100 + num_drafts);
    else
      t.push_back(SampledToken{a, 100, {}, {}, false});  // the shadow draft was right
    scheduler_->update(p, t, ++now_us_);
  }
  EXPECT_EQ(verified, (std::vector<int32_t>{16, 32, 48}));
}

// Drafts that come with chances (n-gram table drafts) are cut where the expected tokens per step cost peak, each
// draft by its own chance, whatever the sequence's acceptance rate; their verdicts do not train that rate (it
// judges the drafts that come without).
TEST_F(SchedulerSpecTest, AdaptiveLengthCutsDraftsWithChancesByTheirOwnChances) {
  make(64, 64, 6, /*adaptive=*/true);
  Sequence* a = add(5, 1000);
  prefill_all();
  // 100 us fixed, 20 us a token: a token costs 1/6 of a 1-token step.
  for (int i = 0; i < 2000; ++i) scheduler_->record_step(i % 2 == 0 ? 1 : 5, i % 2 == 0 ? 120.0 : 200.0);
  ASSERT_NEAR(scheduler_->step_cost().marginal_cost(1), 1.0 / 6.0, 0.01);
  // Sure, sure, then a guess: E = 1, 1.95 / 1.167 = 1.67, 2.85 / 1.33 = 2.14, 2.99 / 1.5 = 1.99 (k = 0..3).
  drafter_.chances = {0.95f, 0.95f, 0.15f, 0.9f};
  const double rate_before = a->draft_length.acceptance_rate();
  const SchedulePlan& p = scheduler_->schedule(++now_us_);
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].num_draft_tokens, 2);
  EXPECT_EQ(drafter_.last_asked, 6);  // a drafter that pays nothing a draft is asked for all it may give
  std::vector<SampledToken> t;
  accept(t, a, 0, 9);  // both rejected, against 1.85 expected
  scheduler_->update(p, t, ++now_us_);
  EXPECT_EQ(a->draft_length.acceptance_rate(), rate_before);  // the rate judges drafts without chances only
  EXPECT_NEAR(a->draft_length.chance_factor(), 2.0 / 3.85, 1e-3);
  EXPECT_TRUE(a->draft_chances.empty());
  // Chances too low to pay, once scaled: no draft verified; the first is a shadow, and the model's agreeing with it
  // raises the factor.
  drafter_.chances = {0.2f, 0.9f};
  const SchedulePlan& p2 = scheduler_->schedule(++now_us_);
  EXPECT_EQ(p2.seqs[0].num_draft_tokens, 0);
  EXPECT_EQ(a->draft_length.shadow(), 100);
  const double factor = a->draft_length.chance_factor();
  t.clear();
  t.push_back(SampledToken{a, 100, {}, {}, false});
  scheduler_->update(p2, t, ++now_us_);
  EXPECT_GT(a->draft_length.chance_factor(), factor);
  EXPECT_EQ(a->draft_length.acceptance_rate(), rate_before);
}

}  // namespace
}  // namespace pagoda
