// Scheduler decisions with exact block ids at a block size of 4, no model involved: chunked prefill within
// the token budget, decode before admission, preemption of the newest when blocks run out (and recompute of
// everything it had), prefix-cache hits on admission and whole-prompt prefill.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/loaded_model.h"

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 4;

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = load_model("", kernels::best_kernels());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    loaded_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() { delete loaded_; }

  void make(int32_t num_blocks, SchedulerConfig config, bool prefix_cache = true) {
    KvCacheManager::Options o;
    o.num_blocks = num_blocks;
    o.block_size = kBlockSize;
    o.enable_prefix_cache = prefix_cache;
    kv_ = std::make_unique<KvCacheManager>(o);
    scheduler_ = std::make_unique<Scheduler>(config, *kv_);
  }

  Sequence* add(std::vector<TokenId> prompt, int32_t priority = 0) {
    GenerateRequest r;
    r.prompt = std::move(prompt);
    r.priority = priority;
    r.sampling.max_tokens = 100;
    seqs_.push_back(std::make_unique<Sequence>(RequestId(seqs_.size()), std::move(r), kBlockSize, *loaded_->tokenizer,
                                               uint64_t(seqs_.size()), 0));
    scheduler_->add(seqs_.back().get());
    return seqs_.back().get();
  }

  // What the engine does after the forward: the sampling sequences get a token, the scheduler indexes blocks.
  void finish_step(const SchedulePlan& plan, TokenId sampled = 7) {
    for (const ScheduledSeq& s : plan.seqs)
      if (s.samples) s.seq->tokens.push_back(sampled);
    scheduler_->on_step_done(plan);
  }

  static std::vector<TokenId> iota_tokens(int32_t n, TokenId first = 1) {
    std::vector<TokenId> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), first);
    return t;
  }
  static std::vector<BlockId> blocks(const Sequence* s) {
    auto ids = s->kv.block_table.block_ids();
    return {ids.begin(), ids.end()};
  }

  static LoadedModel* loaded_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
};

LoadedModel* SchedulerTest::loaded_ = nullptr;

TEST_F(SchedulerTest, ChunksAPromptToTheTokenBudget) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 8});
  Sequence* a = add(iota_tokens(10));
  SchedulePlan p1 = scheduler_->schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].first_pos, 0);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 8);
  EXPECT_FALSE(p1.seqs[0].samples);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1}));
  finish_step(p1);
  SchedulePlan p2 = scheduler_->schedule();
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].first_pos, 8);
  EXPECT_EQ(p2.seqs[0].num_new_tokens, 2);
  EXPECT_TRUE(p2.seqs[0].samples);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1, 2}));
  finish_step(p2);
  // Decoding: one token a step.
  SchedulePlan p3 = scheduler_->schedule();
  ASSERT_EQ(p3.seqs.size(), 1u);
  EXPECT_EQ(p3.seqs[0].first_pos, 10);
  EXPECT_EQ(p3.seqs[0].num_new_tokens, 1);
  EXPECT_TRUE(p3.seqs[0].samples);
}

TEST_F(SchedulerTest, RunningDecodesComeFirstAndNewPromptsFillTheRest) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 6, .max_prefill_tokens_with_decodes = 0});
  Sequence* a = add(iota_tokens(3));
  finish_step(scheduler_->schedule());  // a prefilled, one token sampled
  Sequence* b = add(iota_tokens(9, 100));
  Sequence* c = add(iota_tokens(2, 200));
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);  // a's decode token + 5 of b's prompt; no budget left for c
  EXPECT_EQ(p.seqs[0].seq, a);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].num_new_tokens, 5);
  EXPECT_EQ(p.num_batched_tokens, 6);
  EXPECT_EQ(c->status, SeqStatus::kWaiting);
  EXPECT_EQ(scheduler_->num_running(), 2);
  EXPECT_EQ(scheduler_->num_waiting(), 1);
}

TEST_F(SchedulerTest, WhileStreamsDecodeAStepTakesAtMostTheCappedPromptTokens) {
  make(64, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 32, .max_prefill_tokens_with_decodes = 4});
  // Alone, a prompt gets the whole budget: nobody is decoding.
  Sequence* a = add(iota_tokens(40));
  SchedulePlan p1 = scheduler_->schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 32);
  finish_step(p1);
  finish_step(scheduler_->schedule());  // the last 8 prompt tokens; a samples and is now decoding
  ASSERT_EQ(a->num_uncomputed_tokens(), 1);
  // A long prompt arrives: with a decoding, each step takes a's token and 4 of the prompt's, and the other
  // new prompt waits while the cap is spent.
  Sequence* b = add(iota_tokens(10, 100));
  Sequence* c = add(iota_tokens(3, 200));
  for (int32_t step = 0; step < 2; ++step) {
    SchedulePlan p = scheduler_->schedule();
    ASSERT_EQ(p.seqs.size(), 2u) << step;
    EXPECT_EQ(p.seqs[0].seq, a);
    EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
    EXPECT_EQ(p.seqs[1].seq, b);
    EXPECT_EQ(p.seqs[1].num_new_tokens, 4);
    EXPECT_EQ(c->status, SeqStatus::kWaiting);
    finish_step(p);
  }
  // b's last 2 tokens, then 2 of c's 3: the cap counts every prompt in the step.
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 3u);
  EXPECT_EQ(p.seqs[1].num_new_tokens, 2);
  EXPECT_EQ(p.seqs[2].seq, c);
  EXPECT_EQ(p.seqs[2].num_new_tokens, 2);
  EXPECT_EQ(p.num_batched_tokens, 5);
}

TEST_F(SchedulerTest, ByDefaultPromptTokensPerStepFollowTheDecodingCountWithAFloor) {
  ASSERT_EQ(SchedulerConfig{}.max_prefill_tokens_with_decodes, kAutoPrefillCap);
  // One stream decoding: a prompt gets the floor, kMinPrefillTokensWithDecodes tokens a step.
  make(128, SchedulerConfig{.max_num_seqs = 16, .max_batched_tokens = 64});
  add(iota_tokens(3));
  finish_step(scheduler_->schedule());
  Sequence* b = add(iota_tokens(40, 100));
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].num_new_tokens, kMinPrefillTokensWithDecodes);
  // Seven streams decoding: seven prompt tokens a step, for as long as the prompt lasts.
  make(128, SchedulerConfig{.max_num_seqs = 16, .max_batched_tokens = 64});
  for (int32_t i = 0; i < 7; ++i) add(iota_tokens(3, TokenId(10 * i + 1)));
  finish_step(scheduler_->schedule());  // 21 prompt tokens in one step: nobody was decoding yet
  b = add(iota_tokens(40, 100));
  for (int32_t step = 0; step < 5; ++step) {
    SchedulePlan q = scheduler_->schedule();
    ASSERT_EQ(q.seqs.size(), 8u) << step;
    EXPECT_EQ(q.seqs[7].seq, b);
    EXPECT_EQ(q.seqs[7].num_new_tokens, 7) << step;
    EXPECT_EQ(q.num_batched_tokens, 14) << step;
    finish_step(q);
  }
  // Nobody decoding: a prompt gets the whole budget.
  make(128, SchedulerConfig{.max_num_seqs = 16, .max_batched_tokens = 64});
  add(iota_tokens(100));
  EXPECT_EQ(scheduler_->schedule().seqs[0].num_new_tokens, 64);
}

TEST_F(SchedulerTest, TheSequenceCapHoldsBackAdmission) {
  make(32, SchedulerConfig{.max_num_seqs = 2, .max_batched_tokens = 64});
  add(iota_tokens(3));
  add(iota_tokens(3, 50));
  Sequence* c = add(iota_tokens(3, 90));
  SchedulePlan p = scheduler_->schedule();
  EXPECT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(c->status, SeqStatus::kWaiting);
}

TEST_F(SchedulerTest, OutOfBlocksPreemptsTheNewestWhichIsRecomputedLater) {
  // 4 blocks of 4: a and b take 2 each; a's next token needs a third block, so b (newer) gives its back.
  make(4, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, /*prefix_cache=*/false);
  Sequence* a = add(iota_tokens(8));
  Sequence* b = add(iota_tokens(7, 100));
  SchedulePlan p1 = scheduler_->schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(blocks(b), (std::vector<BlockId>{2, 3}));
  finish_step(p1);  // a: 9 tokens, 8 computed; b: 8 tokens, 7 computed
  SchedulePlan p2 = scheduler_->schedule();
  ASSERT_EQ(p2.preempted.size(), 1u);
  EXPECT_EQ(p2.preempted[0], b);
  EXPECT_EQ(b->status, SeqStatus::kWaiting);
  EXPECT_EQ(b->kv.num_computed_tokens, 0);
  EXPECT_TRUE(b->kv.block_table.empty());
  EXPECT_EQ(b->timing.num_preemptions, 1);
  ASSERT_EQ(p2.seqs.size(), 1u);  // nobody is admitted in a step that preempted
  EXPECT_EQ(p2.seqs[0].seq, a);
  EXPECT_EQ(a->kv.block_table.num_blocks(), 3);
  finish_step(p2);
  EXPECT_EQ(scheduler_->num_preemptions(), 1);
  // When a finishes, b comes back and recomputes its prompt and its sampled token in one go.
  scheduler_->finish(a);
  SchedulePlan p3 = scheduler_->schedule();
  ASSERT_EQ(p3.seqs.size(), 1u);
  EXPECT_EQ(p3.seqs[0].seq, b);
  EXPECT_EQ(p3.seqs[0].first_pos, 0);
  EXPECT_EQ(p3.seqs[0].num_new_tokens, 8);
  EXPECT_TRUE(p3.seqs[0].samples);
  EXPECT_EQ(kv_->pool().num_used(), 2);
}

TEST_F(SchedulerTest, APromptSharingFullBlocksStartsAfterThem) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64});
  Sequence* a = add(iota_tokens(10));
  finish_step(scheduler_->schedule());
  std::vector<TokenId> shared = iota_tokens(8);
  shared.push_back(77);
  shared.push_back(78);
  shared.push_back(79);
  Sequence* b = add(shared);
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].first_pos, 8);  // blocks 0 and 1 of a are reused
  EXPECT_EQ(p.seqs[1].num_new_tokens, 3);
  EXPECT_EQ(b->num_cached_tokens, 8);
  EXPECT_EQ(blocks(b)[0], blocks(a)[0]);
  EXPECT_EQ(blocks(b)[1], blocks(a)[1]);
  EXPECT_NE(blocks(b)[2], blocks(a)[2]);
}

TEST_F(SchedulerTest, NoPrefixCacheMeansNoHit) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  add(iota_tokens(10));
  finish_step(scheduler_->schedule());
  Sequence* b = add(iota_tokens(10));
  SchedulePlan p = scheduler_->schedule();
  EXPECT_EQ(p.seqs[1].first_pos, 0);
  EXPECT_EQ(b->num_cached_tokens, 0);
}

TEST_F(SchedulerTest, WithoutChunkingAPromptRunsWholeEvenPastTheBudget) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 4, .chunked_prefill = false});
  Sequence* a = add(iota_tokens(10));
  Sequence* b = add(iota_tokens(3, 50));
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].seq, a);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 10);
  EXPECT_TRUE(p.seqs[0].samples);
  EXPECT_EQ(b->status, SeqStatus::kWaiting);
}

TEST_F(SchedulerTest, WithoutChunkingALongPromptJoinsTheRunningDecodesInsteadOfWaitingForThem) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 4, .chunked_prefill = false});
  Sequence* a = add(iota_tokens(2));
  Sequence* b = add(iota_tokens(2, 20));
  finish_step(scheduler_->schedule());  // both prefilled (4 tokens), each sampled one
  Sequence* c = add(iota_tokens(10, 50));
  Sequence* d = add(iota_tokens(10, 80));
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 3u);  // the decodes of a and b, and c whole; d, a second prefill, waits
  EXPECT_EQ(p.seqs[0].seq, a);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[2].seq, c);
  EXPECT_EQ(p.seqs[2].num_new_tokens, 10);
  EXPECT_EQ(p.num_batched_tokens, 12);
  EXPECT_EQ(d->status, SeqStatus::kWaiting);
  finish_step(p);
  SchedulePlan next = scheduler_->schedule();  // three decodes, then d whole
  ASSERT_EQ(next.seqs.size(), 4u);
  EXPECT_EQ(next.seqs[3].seq, d);
  EXPECT_EQ(next.seqs[3].num_new_tokens, 10);
}

TEST_F(SchedulerTest, PriorityOrdersAdmission) {
  make(32, SchedulerConfig{.max_num_seqs = 1, .max_batched_tokens = 64});
  add(iota_tokens(3), /*priority=*/5);
  Sequence* urgent = add(iota_tokens(3, 50), /*priority=*/-1);
  SchedulePlan p = scheduler_->schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].seq, urgent);
}

TEST_F(SchedulerTest, RemoveFreesEveryBlock) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  Sequence* a = add(iota_tokens(10));
  Sequence* b = add(iota_tokens(5, 40));
  finish_step(scheduler_->schedule());
  EXPECT_GT(kv_->pool().num_used(), 0);
  EXPECT_TRUE(scheduler_->remove(a));
  EXPECT_TRUE(scheduler_->remove(b));
  EXPECT_FALSE(scheduler_->remove(b));
  EXPECT_EQ(kv_->pool().num_used(), 0);
  EXPECT_FALSE(scheduler_->has_work());
}

}  // namespace
}  // namespace pagoda
