// Scheduler decisions with exact block ids at a block size of 4, no model and no tokenizer involved: chunked
// prefill within the token budget, decode before admission, preemption of the newest when blocks run out (and
// recompute of everything it had), prefix-cache hits on admission, whole-prompt prefill; and update(), the one
// place a sequence finishes: end-of-generation tokens, max_tokens, the context's end, a stop string the output
// processor found, cancels, and what each event reports. With state slots and snapshots (a hybrid model's prefix
// cache): prompt chunks cut to block boundaries, each chunk end snapshotted, a hit restoring one, and a chunk
// stopped at the end of a cached chain that has no snapshot yet.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr TokenId kEos = 2;
constexpr int32_t kMaxSeqLen = 1024;

class SchedulerTest : public ::testing::Test {
 protected:
  void make(int32_t num_blocks, SchedulerConfig config, bool prefix_cache = true, int32_t num_state_slots = 0,
            int32_t num_state_snapshots = 0) {
    KvCacheManager::Options o;
    o.num_blocks = num_blocks;
    o.block_size = kBlockSize;
    o.enable_prefix_cache = prefix_cache;
    o.num_state_slots = num_state_slots;
    o.num_state_snapshots = num_state_snapshots;
    scheduler_.reset();
    kv_ = std::make_unique<KvCacheManager>(o);
    scheduler_ = std::make_unique<Scheduler>(config, *kv_, std::vector<TokenId>{kEos});
  }

  Sequence* add(std::vector<TokenId> prompt, int32_t priority = 0, int32_t max_tokens = 100,
                int32_t max_seq_len = kMaxSeqLen) {
    GenerateRequest r;
    r.prompt = std::move(prompt);
    r.priority = priority;
    r.sampling.max_tokens = max_tokens;
    const RequestId id = next_id_++;
    return scheduler_->add(std::make_unique<Sequence>(id, std::move(r), kBlockSize, max_seq_len, uint64_t(id), 0));
  }

  // What the engine does after the forward: a token for each sampling sequence (`eos_for` gets the
  // end-of-generation token), then the scheduler's update.
  std::vector<SeqEvent> finish_step(const SchedulePlan& plan, TokenId sampled = 7, const Sequence* eos_for = nullptr) {
    std::vector<SampledToken> tokens;
    for (const ScheduledSeq& s : plan.seqs)
      if (s.samples) tokens.push_back(SampledToken{s.seq, s.seq == eos_for ? kEos : sampled, {}, {}, false});
    return scheduler_->update(plan, tokens, ++now_us_);
  }
  SchedulePlan schedule() { return scheduler_->schedule(++now_us_); }

  static std::vector<TokenId> iota_tokens(int32_t n, TokenId first = 1) {
    std::vector<TokenId> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), first);
    return t;
  }
  static std::vector<BlockId> blocks(const Sequence* s) {
    auto ids = s->kv.block_table.block_ids();
    return {ids.begin(), ids.end()};
  }

  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  RequestId next_id_ = 1;
  int64_t now_us_ = 0;
};

TEST_F(SchedulerTest, AHybridModelsPromptChunksEndAtBlockBoundariesAndLeaveSnapshots) {
  make(32, SchedulerConfig{.max_num_seqs = 4, .max_batched_tokens = 7}, true, 5, 4);
  Sequence* a = add(iota_tokens(14), 0, 1);
  // Budget 7: chunks [0, 4) and [4, 8) (cut to the block), then [8, 12) (the chunk reaching the end stops at the last
  // boundary before the last token) and [12, 14).
  std::vector<std::pair<int32_t, int32_t>> chunks;
  std::vector<size_t> saves;
  for (int step = 0; step < 4; ++step) {
    const SchedulePlan p = schedule();
    ASSERT_EQ(p.seqs.size(), 1u);
    chunks.emplace_back(p.seqs[0].first_pos, p.seqs[0].num_new_tokens);
    kv_->clear_pending_copies();
    finish_step(p, kEos);
    saves.push_back(kv_->pending_state_copies().size());
  }
  EXPECT_EQ(chunks, (std::vector<std::pair<int32_t, int32_t>>{{0, 4}, {4, 4}, {8, 4}, {12, 2}}));
  EXPECT_EQ(saves, (std::vector<size_t>{1, 1, 1, 0}));  // a snapshot at 4, 8 and 12
  EXPECT_EQ(scheduler_->num_running(), 0);
  (void)a;

  // The same 12 tokens then others: restored at 12.
  std::vector<TokenId> b_prompt = iota_tokens(12);
  b_prompt.push_back(90);
  b_prompt.push_back(91);
  Sequence* b = add(b_prompt, 0, 1);
  kv_->clear_pending_copies();
  const SchedulePlan pb = schedule();
  ASSERT_EQ(pb.seqs.size(), 1u);
  EXPECT_EQ(pb.seqs[0].first_pos, 12);
  EXPECT_EQ(b->num_cached_tokens, 12);
  ASSERT_EQ(kv_->pending_state_copies().size(), 1u);  // the restore
  EXPECT_EQ(kv_->pending_state_copies()[0].dst_slot, b->kv.state_slot);
  finish_step(pb, kEos);
}

TEST_F(SchedulerTest, AHybridModelsChunkStopsWhereACachedChainHasNoSnapshot) {
  make(32, SchedulerConfig{.max_num_seqs = 4, .max_batched_tokens = 64}, true, 5, 4);
  std::vector<TokenId> first = iota_tokens(10);
  first.push_back(80);
  first.push_back(81);
  first.push_back(82);
  add(first, 0, 1);
  SchedulePlan p = schedule();  // [0, 12): the last boundary before the last token
  ASSERT_EQ(p.seqs[0].num_new_tokens, 12);
  finish_step(p);
  p = schedule();
  finish_step(p, kEos);
  // Shares 8 tokens (2 cached blocks) but no snapshot there: computed from 0, its first chunk stopping at 8.
  std::vector<TokenId> second = iota_tokens(8);
  for (TokenId t : {50, 51, 52, 53, 54, 55}) second.push_back(t);
  Sequence* b = add(second, 0, 1);
  p = schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].first_pos, 0);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 8);
  EXPECT_EQ(b->num_cached_tokens, 0);
  kv_->clear_pending_copies();
  finish_step(p);
  EXPECT_EQ(kv_->pending_state_copies().size(), 1u);  // its state at 8 saved
  EXPECT_EQ(kv_->state_snapshots().size(), 2);        // the first prompt's at 12 and the shared prefix's at 8
}

TEST_F(SchedulerTest, ChunksAPromptToTheTokenBudget) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 8});
  Sequence* a = add(iota_tokens(10));
  SchedulePlan p1 = schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].first_pos, 0);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 8);
  EXPECT_FALSE(p1.seqs[0].samples);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1}));
  finish_step(p1);
  SchedulePlan p2 = schedule();
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].first_pos, 8);
  EXPECT_EQ(p2.seqs[0].num_new_tokens, 2);
  EXPECT_TRUE(p2.seqs[0].samples);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1, 2}));
  finish_step(p2);
  // Decoding: one token a step.
  SchedulePlan p3 = schedule();
  ASSERT_EQ(p3.seqs.size(), 1u);
  EXPECT_EQ(p3.seqs[0].first_pos, 10);
  EXPECT_EQ(p3.seqs[0].num_new_tokens, 1);
  EXPECT_TRUE(p3.seqs[0].samples);
}

TEST_F(SchedulerTest, RunningDecodesComeFirstAndNewPromptsFillTheRest) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 6, .max_prefill_tokens_with_decodes = 0});
  Sequence* a = add(iota_tokens(3));
  finish_step(schedule());  // a prefilled, one token sampled
  Sequence* b = add(iota_tokens(9, 100));
  Sequence* c = add(iota_tokens(2, 200));
  SchedulePlan p = schedule();
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
  SchedulePlan p1 = schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 32);
  finish_step(p1);
  finish_step(schedule());  // the last 8 prompt tokens; a samples and is now decoding
  ASSERT_EQ(a->num_uncomputed_tokens(), 1);
  // A long prompt arrives: with a decoding, each step takes a's token and 4 of the prompt's, and the other
  // new prompt waits while the cap is spent.
  Sequence* b = add(iota_tokens(10, 100));
  Sequence* c = add(iota_tokens(3, 200));
  for (int32_t step = 0; step < 2; ++step) {
    SchedulePlan p = schedule();
    ASSERT_EQ(p.seqs.size(), 2u) << step;
    EXPECT_EQ(p.seqs[0].seq, a);
    EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
    EXPECT_EQ(p.seqs[1].seq, b);
    EXPECT_EQ(p.seqs[1].num_new_tokens, 4);
    EXPECT_EQ(c->status, SeqStatus::kWaiting);
    finish_step(p);
  }
  // b's last 2 tokens, then 2 of c's 3: the cap counts every prompt in the step.
  SchedulePlan p = schedule();
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
  finish_step(schedule());
  Sequence* b = add(iota_tokens(40, 100));
  SchedulePlan p = schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].num_new_tokens, kMinPrefillTokensWithDecodes);
  // Seven streams decoding: seven prompt tokens a step, for as long as the prompt lasts.
  make(128, SchedulerConfig{.max_num_seqs = 16, .max_batched_tokens = 64});
  for (int32_t i = 0; i < 7; ++i) add(iota_tokens(3, TokenId(10 * i + 1)));
  finish_step(schedule());  // 21 prompt tokens in one step: nobody was decoding yet
  b = add(iota_tokens(40, 100));
  for (int32_t step = 0; step < 5; ++step) {
    SchedulePlan q = schedule();
    ASSERT_EQ(q.seqs.size(), 8u) << step;
    EXPECT_EQ(q.seqs[7].seq, b);
    EXPECT_EQ(q.seqs[7].num_new_tokens, 7) << step;
    EXPECT_EQ(q.num_batched_tokens, 14) << step;
    finish_step(q);
  }
  // Nobody decoding: a prompt gets the whole budget.
  make(128, SchedulerConfig{.max_num_seqs = 16, .max_batched_tokens = 64});
  add(iota_tokens(100));
  EXPECT_EQ(schedule().seqs[0].num_new_tokens, 64);
}

TEST_F(SchedulerTest, WithAFittedStepModelThePromptTokensFollowTheTimeTargets) {
  // Steps cost 15 ms + 3 ms a token (fed as the engine would after each step): while one stream decodes, a
  // prompt gets what keeps a step within 3x the decode-only one (12 tokens), or within --tpot-slo.
  SchedulerConfig c{.max_num_seqs = 16, .max_batched_tokens = 64};
  // A fresh scheduler with the step model fitted, one stream decoding, and a 40-token prompt arriving.
  const auto start = [&] {
    make(128, c);
    for (int n = 1; n <= 32; ++n) scheduler_->record_step_time(n, 15000.0 + 3000.0 * n);
    add(iota_tokens(3));
    finish_step(schedule());
    return add(iota_tokens(40, 100));
  };
  Sequence* b = start();
  SchedulePlan p = schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].num_new_tokens, 12);
  EXPECT_EQ(p.prefill_budget, 12);
  c.tpot_slo_ms = 45.0;  // 15 + 3 x (1 + 9) = 45
  start();
  EXPECT_EQ(schedule().prefill_budget, 9);
  // A TTFT target the prompt would miss at 9 tokens a step (40 tokens in ~250 ms at 9, ~0.15 s allowed): more.
  c.ttft_slo_ms = 0.15e3;
  start();
  const SchedulePlan q = schedule();
  EXPECT_GT(q.prefill_budget, 9);
  EXPECT_EQ(q.seqs[1].num_new_tokens, q.prefill_budget);
  // Nobody decoding: no budget decision, the prompt takes the step.
  make(128, c);
  add(iota_tokens(100));
  const SchedulePlan r = schedule();
  EXPECT_EQ(r.prefill_budget, -1);
  EXPECT_EQ(r.seqs[0].num_new_tokens, 64);
}

TEST_F(SchedulerTest, TheSequenceCapHoldsBackAdmission) {
  make(32, SchedulerConfig{.max_num_seqs = 2, .max_batched_tokens = 64});
  add(iota_tokens(3));
  add(iota_tokens(3, 50));
  Sequence* c = add(iota_tokens(3, 90));
  SchedulePlan p = schedule();
  EXPECT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(c->status, SeqStatus::kWaiting);
}

TEST_F(SchedulerTest, OutOfBlocksPreemptsTheNewestWhichIsRecomputedLater) {
  // 4 blocks of 4: a and b take 2 each; a's next token needs a third block, so b (newer) gives its back.
  make(4, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, /*prefix_cache=*/false);
  Sequence* a = add(iota_tokens(8));
  Sequence* b = add(iota_tokens(7, 100));
  SchedulePlan p1 = schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  EXPECT_EQ(blocks(a), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(blocks(b), (std::vector<BlockId>{2, 3}));
  finish_step(p1);  // a: 9 tokens, 8 computed; b: 8 tokens, 7 computed
  SchedulePlan p2 = schedule();
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
  // When a leaves, b comes back and recomputes its prompt and its sampled token in one go.
  ASSERT_TRUE(scheduler_->abort(a->request_id, now_us_));
  SchedulePlan p3 = schedule();
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
  finish_step(schedule());
  std::vector<TokenId> shared = iota_tokens(8);
  shared.push_back(77);
  shared.push_back(78);
  shared.push_back(79);
  Sequence* b = add(shared);
  SchedulePlan p = schedule();
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
  finish_step(schedule());
  Sequence* b = add(iota_tokens(10));
  SchedulePlan p = schedule();
  EXPECT_EQ(p.seqs[1].first_pos, 0);
  EXPECT_EQ(b->num_cached_tokens, 0);
}

TEST_F(SchedulerTest, WithoutChunkingAPromptRunsWholeEvenPastTheBudget) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 4, .chunked_prefill = false});
  Sequence* a = add(iota_tokens(10));
  Sequence* b = add(iota_tokens(3, 50));
  SchedulePlan p = schedule();
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
  finish_step(schedule());  // both prefilled (4 tokens), each sampled one
  Sequence* c = add(iota_tokens(10, 50));
  Sequence* d = add(iota_tokens(10, 80));
  SchedulePlan p = schedule();
  ASSERT_EQ(p.seqs.size(), 3u);  // the decodes of a and b, and c whole; d, a second prefill, waits
  EXPECT_EQ(p.seqs[0].seq, a);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[2].seq, c);
  EXPECT_EQ(p.seqs[2].num_new_tokens, 10);
  EXPECT_EQ(p.num_batched_tokens, 12);
  EXPECT_EQ(d->status, SeqStatus::kWaiting);
  finish_step(p);
  SchedulePlan next = schedule();  // three decodes, then d whole
  ASSERT_EQ(next.seqs.size(), 4u);
  EXPECT_EQ(next.seqs[3].seq, d);
  EXPECT_EQ(next.seqs[3].num_new_tokens, 10);
}

TEST_F(SchedulerTest, PriorityOrdersAdmission) {
  make(32, SchedulerConfig{.max_num_seqs = 1, .max_batched_tokens = 64});
  add(iota_tokens(3), /*priority=*/5);
  Sequence* urgent = add(iota_tokens(3, 50), /*priority=*/-1);
  SchedulePlan p = schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].seq, urgent);
}

TEST_F(SchedulerTest, RemoveFreesEveryBlock) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  Sequence* a = add(iota_tokens(10));
  Sequence* b = add(iota_tokens(5, 40));
  finish_step(schedule());
  EXPECT_GT(kv_->pool().num_used(), 0);
  const RequestId b_id = b->request_id;
  EXPECT_TRUE(scheduler_->abort(a->request_id, 0));
  EXPECT_TRUE(scheduler_->abort(b_id, 0));
  EXPECT_FALSE(scheduler_->abort(b_id, 0));
  EXPECT_EQ(kv_->pool().num_used(), 0);
  EXPECT_FALSE(scheduler_->has_work());
}

TEST_F(SchedulerTest, UpdateEndsASequenceAtItsEndOfGenerationTokenUnlessItIgnoresIt) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  Sequence* a = add(iota_tokens(3));
  Sequence* b = add(iota_tokens(3, 40));
  b->sampling.ignore_eos = true;
  const RequestId a_id = a->request_id, b_id = b->request_id;
  const std::vector<SeqEvent> events = finish_step(schedule(), kEos);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].request_id, a_id);
  EXPECT_EQ(events[0].token, kEos);
  EXPECT_TRUE(events[0].finished);
  EXPECT_EQ(events[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(events[0].num_prompt_tokens, 3);
  EXPECT_EQ(events[0].num_output_tokens, 1);  // the end-of-generation token counts as output
  ASSERT_TRUE(events[0].timing);
  EXPECT_EQ(events[0].timing->token_us.size(), 1u);
  EXPECT_EQ(events[0].timing->finish_us, now_us_);
  EXPECT_EQ(scheduler_->find(a_id), nullptr);  // it left
  EXPECT_EQ(events[1].request_id, b_id);
  EXPECT_FALSE(events[1].finished);
  EXPECT_FALSE(events[1].timing);
  EXPECT_EQ(scheduler_->num_running(), 1);
  EXPECT_EQ(kv_->pool().num_used(), 1);  // b's block only
}

TEST_F(SchedulerTest, UpdateEndsASequenceByLengthAtMaxTokensOrTheContextsEnd) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  Sequence* a = add(iota_tokens(3), 0, /*max_tokens=*/2);
  add(iota_tokens(3, 40), 0, /*max_tokens=*/100, /*max_seq_len=*/6);
  const RequestId a_id = a->request_id;
  std::vector<SeqEvent> first = finish_step(schedule());
  ASSERT_EQ(first.size(), 2u);
  EXPECT_FALSE(first[0].finished || first[1].finished);
  std::vector<SeqEvent> second = finish_step(schedule());
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].request_id, a_id);
  EXPECT_TRUE(second[0].finished);
  EXPECT_EQ(second[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(second[0].num_output_tokens, 2);
  EXPECT_FALSE(second[1].finished);  // 5 of its 6 positions
  std::vector<SeqEvent> third = finish_step(schedule());
  ASSERT_EQ(third.size(), 1u);
  EXPECT_TRUE(third[0].finished);
  EXPECT_EQ(third[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(third[0].num_output_tokens, 3);
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(kv_->pool().num_used(), 0);
}

TEST_F(SchedulerTest, AStopStringTheOutputProcessorFoundEndsTheSequenceInThatStepAndWinsOverLength) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64}, false);
  add(iota_tokens(3), 0, /*max_tokens=*/1);  // its first token is also its last by length
  add(iota_tokens(3, 40));
  const SchedulePlan p = schedule();
  std::vector<SampledToken> tokens;
  for (const ScheduledSeq& s : p.seqs) tokens.push_back(SampledToken{s.seq, 7, {}, {}, /*completes_stop_string=*/true});
  const std::vector<SeqEvent> events = scheduler_->update(p, tokens, ++now_us_);
  ASSERT_EQ(events.size(), 2u);
  for (const SeqEvent& e : events) {
    EXPECT_TRUE(e.finished);
    EXPECT_EQ(e.finish_reason, FinishReason::kStop);
  }
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(kv_->pool().num_used(), 0);
}

TEST_F(SchedulerTest, AFinishedSequencesFullBlocksStayFindableInThePrefixCache) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64});
  add(iota_tokens(9), 0, /*max_tokens=*/1);
  const std::vector<SeqEvent> events = finish_step(schedule());
  ASSERT_TRUE(events.at(0).finished);
  EXPECT_EQ(kv_->pool().num_used(), 0);
  Sequence* b = add(iota_tokens(9));
  const SchedulePlan p = schedule();
  EXPECT_EQ(p.seqs.at(0).first_pos, 8);  // two full blocks served from the cache
  EXPECT_EQ(b->num_cached_tokens, 8);
}

TEST_F(SchedulerTest, AbortTakesAWaitingOrRunningSequenceAndReportsIt) {
  make(16, SchedulerConfig{.max_num_seqs = 1, .max_batched_tokens = 64}, false);
  Sequence* a = add(iota_tokens(5));
  Sequence* b = add(iota_tokens(5, 40));
  const RequestId a_id = a->request_id, b_id = b->request_id;
  finish_step(schedule());  // a runs and has a token; b waits
  std::optional<SeqEvent> waiting = scheduler_->abort(b_id, 50);
  ASSERT_TRUE(waiting);
  EXPECT_TRUE(waiting->finished);
  EXPECT_EQ(waiting->finish_reason, FinishReason::kAbort);
  EXPECT_EQ(waiting->token, -1);
  EXPECT_EQ(waiting->num_output_tokens, 0);
  ASSERT_TRUE(waiting->timing);
  EXPECT_EQ(waiting->timing->finish_us, 50);
  EXPECT_EQ(scheduler_->num_waiting(), 0);
  std::optional<SeqEvent> running = scheduler_->abort(a_id, 60);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->num_output_tokens, 1);
  EXPECT_EQ(running->timing->token_us.size(), 1u);
  EXPECT_EQ(kv_->pool().num_used(), 0);
  EXPECT_FALSE(scheduler_->abort(a_id, 70));
  add(iota_tokens(3));
  add(iota_tokens(3, 40));
  finish_step(schedule());
  const std::vector<SeqEvent> all = scheduler_->abort_all(80);
  EXPECT_EQ(all.size(), 2u);
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(kv_->pool().num_used(), 0);
}

TEST_F(SchedulerTest, ThePlanCountsPrefillWorkAndFirstScheduledPrompts) {
  make(32, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 8, .max_prefill_tokens_with_decodes = 0});
  Sequence* a = add(iota_tokens(10));
  const SchedulePlan p1 = schedule();
  EXPECT_EQ(p1.num_prefill_tokens, 8);
  EXPECT_EQ(p1.num_admitted_prompt_tokens, 10);  // once, at its first step
  EXPECT_EQ(a->timing.first_scheduled_us, now_us_);
  finish_step(p1);
  const SchedulePlan p2 = schedule();
  EXPECT_EQ(p2.num_prefill_tokens, 2);
  EXPECT_EQ(p2.num_admitted_prompt_tokens, 0);
  finish_step(p2);
  const SchedulePlan p3 = schedule();  // decoding: no prompt position
  EXPECT_EQ(p3.num_prefill_tokens, 0);
}

TEST_F(SchedulerTest, ARequestForPromptLogitsTakesNoPrefixHit) {
  make(16, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 64});
  add(iota_tokens(10));
  finish_step(schedule());
  Sequence* b = add(iota_tokens(10));
  b->prompt_logits_start = 4;
  const SchedulePlan p = schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].first_pos, 0);  // its rows from position 4 on must be computed
  EXPECT_EQ(b->num_cached_tokens, 0);
}

TEST_F(SchedulerTest, NSamplesOfAPromptArePrefilledOnceAndForkedIntoSharedBlocksCopiedOnWrite) {
  make(16, SchedulerConfig{.max_num_seqs = 4, .max_batched_tokens = 64}, false);
  // A 6-token prompt: blocks 0 (full) and 1 (2 of 4 slots).
  GenerateRequest r;
  r.prompt = iota_tokens(6);
  r.sampling.max_tokens = 10;
  std::vector<std::unique_ptr<Sequence>> samples;
  for (RequestId id : {11, 12, 13}) samples.push_back(std::make_unique<Sequence>(id, r, kBlockSize, kMaxSeqLen, 1, 0));
  Sequence* parent =
      scheduler_->add_group(std::make_unique<Sequence>(-11, r, kBlockSize, kMaxSeqLen, 0, 0), std::move(samples));
  const std::vector<Sequence*> forks = parent->forks;
  // One more request cannot take a seat: the group holds three of the four.
  add(iota_tokens(3, 50));
  add(iota_tokens(3, 60));
  const SchedulePlan p1 = schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);  // the parent's prompt once, and one other request
  EXPECT_EQ(p1.seqs[0].seq, parent);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 6);
  EXPECT_EQ(p1.num_prefill_tokens, 9);
  EXPECT_EQ(scheduler_->num_waiting(), 1);
  EXPECT_EQ(blocks(parent), (std::vector<BlockId>{0, 1}));
  // The step samples each sample's first token from the parent's row.
  const int64_t scheduled_us = parent->timing.first_scheduled_us;
  std::vector<SampledToken> tokens;
  for (Sequence* s : forks) tokens.push_back(SampledToken{s, TokenId(70 + s->request_id), {}, {}, false});
  tokens.push_back(SampledToken{p1.seqs[1].seq, 7, {}, {}, false});
  const std::vector<SeqEvent> events = scheduler_->update(p1, tokens, ++now_us_);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].request_id, 11);
  EXPECT_EQ(events[0].token, 81);
  EXPECT_EQ(events[0].num_prompt_tokens, 6);
  EXPECT_EQ(scheduler_->find(-11), nullptr);  // the parent is gone, its blocks held by its samples
  EXPECT_EQ(scheduler_->num_running(), 4);
  for (Sequence* s : forks) {
    EXPECT_EQ(blocks(s), (std::vector<BlockId>{0, 1}));
    EXPECT_EQ(s->timing.first_scheduled_us, scheduled_us);
    EXPECT_EQ(std::vector<TokenId>(s->output().begin(), s->output().end()),
              std::vector<TokenId>{TokenId(70 + s->request_id)});
  }
  EXPECT_EQ(kv_->pool().ref_count(0), 3);
  EXPECT_EQ(kv_->pool().ref_count(1), 3);
  // Each writes its token into the shared partial block: the first two get copies, the last writes in place.
  const SchedulePlan p2 = schedule();
  ASSERT_EQ(p2.seqs.size(), 4u);
  EXPECT_EQ(p2.num_prefill_tokens, 0);
  EXPECT_EQ(blocks(forks[0]), (std::vector<BlockId>{0, 3}));
  EXPECT_EQ(blocks(forks[1]), (std::vector<BlockId>{0, 4}));
  EXPECT_EQ(blocks(forks[2]), (std::vector<BlockId>{0, 1}));
  ASSERT_EQ(kv_->pending_copies().size(), 2u);
  EXPECT_EQ(kv_->pending_copies()[0].src_block_id, 1);
  EXPECT_EQ(kv_->pending_copies()[0].dst_block_id, 3);
  EXPECT_EQ(kv_->pool().ref_count(0), 3);  // the full block stays shared for good
  EXPECT_EQ(kv_->pool().num_used(), 5);    // 0, 1, 3, 4 and the other request's 2
}

TEST_F(SchedulerTest, CancellingEverySampleBeforeTheForkDropsTheParent) {
  make(16, SchedulerConfig{.max_num_seqs = 4, .max_batched_tokens = 4}, false);
  GenerateRequest r;
  r.prompt = iota_tokens(10);
  std::vector<std::unique_ptr<Sequence>> samples;
  for (RequestId id : {21, 22}) samples.push_back(std::make_unique<Sequence>(id, r, kBlockSize, kMaxSeqLen, 1, 0));
  scheduler_->add_group(std::make_unique<Sequence>(-21, r, kBlockSize, kMaxSeqLen, 0, 0), std::move(samples));
  finish_step(schedule());                        // 4 of the 10 prompt tokens
  EXPECT_FALSE(scheduler_->abort(-21, now_us_));  // a parent has no client to cancel it
  std::optional<SeqEvent> first = scheduler_->abort(21, now_us_);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->finish_reason, FinishReason::kAbort);
  EXPECT_EQ(first->num_output_tokens, 0);
  EXPECT_NE(scheduler_->find(-21), nullptr);  // still prefilling for sample 22
  EXPECT_EQ(kv_->pool().num_used(), 1);
  ASSERT_TRUE(scheduler_->abort(22, now_us_));
  EXPECT_EQ(scheduler_->find(-21), nullptr);
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(kv_->pool().num_used(), 0);
  // abort_all answers the samples and takes their parents with them.
  std::vector<std::unique_ptr<Sequence>> more;
  for (RequestId id : {31, 32, 33}) more.push_back(std::make_unique<Sequence>(id, r, kBlockSize, kMaxSeqLen, 1, 0));
  scheduler_->add_group(std::make_unique<Sequence>(-31, r, kBlockSize, kMaxSeqLen, 0, 0), std::move(more));
  finish_step(schedule());
  EXPECT_EQ(scheduler_->abort_all(now_us_).size(), 3u);
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(kv_->pool().num_used(), 0);
}

}  // namespace
}  // namespace pagoda
