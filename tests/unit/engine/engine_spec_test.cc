// Speculative decoding through the Engine on the bundled model (prompt-lookup drafts): greedy tokens and text are
// those of the same engine without speculation, alone, in a batch of 16 and under a KV pool so small that
// sequences are preempted; token by token, each output carries one token and its own text; stop strings and
// logprobs come out as without speculation; sampled requests run to their end with every block given back; and
// the speculation actually happened (drafts verified and accepted, counted in the stats). A draft model's drafts
// likewise: the bundled model drafting for itself (every draft accepted) and a draft that is wrong at every third
// position (drafts rejected and rolled back), alone, in a batch and under preemption. With an n-gram history, a
// request's drafts also come from earlier requests' outputs, its text unchanged.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/bundled_engine_fixture.h"
#include "support/perturbed_model.h"

namespace pagoda {
namespace {

using namespace std::chrono_literals;

class EngineSpecTest : public BundledEngineTest {
 protected:
  static EngineConfig config(int32_t num_blocks, int32_t num_spec_tokens, int32_t block_size = 16) {
    return BundledEngineTest::config(num_blocks, block_size, num_spec_tokens);
  }
  static std::vector<GenerateRequest> mixed_requests() { return BundledEngineTest::mixed_requests(20); }
  // `draft` proposing up to `num_spec_tokens` drafts.
  static EngineConfig draft_config(int32_t num_blocks, int32_t num_spec_tokens, const Model& draft,
                                   int32_t block_size = 16) {
    EngineConfig c = BundledEngineTest::config(num_blocks, block_size, num_spec_tokens);
    c.spec = SpecDecodeConfig{.method = SpecMethod::kDraftModel, .draft_model = &draft};
    return c;
  }
};

TEST_F(EngineSpecTest, GreedyTextAloneAndInABatchOf16IsTheTextWithoutSpeculation) {
  auto plain = make(config(256, 0));
  auto spec = make(config(256, 5));
  ASSERT_TRUE(plain && spec);
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  for (size_t i = 0; i < 6; ++i) {  // each prompt once (they repeat with period 6), to keep the test cheap
    const std::vector<RequestOutput> alone = run_batch(*spec, {requests[i]});
    EXPECT_EQ(alone[0].new_tokens, reference[i].new_tokens) << "request " << i << " alone";
    EXPECT_EQ(alone[0].text, reference[i].text) << "request " << i << " alone";
    EXPECT_EQ(alone[0].finish_reason, reference[i].finish_reason) << "request " << i << " alone";
  }
  const std::vector<RequestOutput> batch = run_batch(*spec, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(batch[i].new_tokens, reference[i].new_tokens) << "request " << i << " in the batch";
    EXPECT_EQ(batch[i].text, reference[i].text) << "request " << i << " in the batch";
    EXPECT_EQ(batch[i].num_output_tokens, reference[i].num_output_tokens);
  }
  const EngineStats s = spec->stats();
  EXPECT_GT(s.spec_num_drafts, 0);
  EXPECT_GT(s.spec_num_accepted_tokens, 0);
  EXPECT_LT(s.spec_num_accepted_tokens, s.spec_num_draft_tokens);  // some rejected: the rollback ran
  ASSERT_EQ(s.spec_num_accepted_tokens_per_pos.size(), 5u);
  int64_t sum = 0;
  for (size_t j = 0; j < 5; ++j) {
    sum += s.spec_num_accepted_tokens_per_pos[j];
    if (j > 0) {
      EXPECT_LE(s.spec_num_accepted_tokens_per_pos[j], s.spec_num_accepted_tokens_per_pos[j - 1]);
    }
  }
  EXPECT_EQ(sum, s.spec_num_accepted_tokens);
  // Every token counted once, however many a step gave (six requests ran alone, then all as a batch).
  int64_t num_alone = 0;
  for (size_t i = 0; i < 6; ++i) num_alone += int64_t(reference[i].new_tokens.size());
  EXPECT_EQ(s.num_generation_tokens, plain->stats().num_generation_tokens + num_alone);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.num_running, 0);
}

TEST_F(EngineSpecTest, GreedyTextUnderATinyPoolWithPreemptionIsTheTextWithoutSpeculation) {
  auto plain = make(config(256, 0, 4));
  auto tiny = make(config(40, 6, 4));  // 160 slots for 16 requests of up to ~120 tokens each
  ASSERT_TRUE(plain && tiny);
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  const std::vector<RequestOutput> out = run_batch(*tiny, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(out[i].new_tokens, reference[i].new_tokens) << "request " << i;
    EXPECT_EQ(out[i].text, reference[i].text) << "request " << i;
  }
  const EngineStats s = tiny->stats();
  EXPECT_GT(s.num_preemptions, 0);
  EXPECT_GT(s.spec_num_accepted_tokens, 0);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
}

// Speculative verification and its rollback with each KV type the bundled model's heads of 8 allow, and K and V of
// different types: a batch with drafts gives the text without them, in a pool small enough to preempt.
class EngineSpecKvTypesTest : public EngineSpecTest, public ::testing::WithParamInterface<KvCacheTypes> {};

TEST_P(EngineSpecKvTypesTest, GreedyTextInABatchAndUnderPreemptionIsTheTextWithoutSpeculation) {
  EngineConfig plain_config = config(256, 0, 4), tiny_config = config(40, 6, 4);
  plain_config.kv_types = tiny_config.kv_types = GetParam();
  auto plain = make(plain_config);
  auto tiny = make(tiny_config);
  ASSERT_TRUE(plain && tiny);
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  const std::vector<RequestOutput> out = run_batch(*tiny, requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(out[i].new_tokens, reference[i].new_tokens) << "request " << i;
  const EngineStats s = tiny->stats();
  EXPECT_GT(s.num_preemptions, 0);
  EXPECT_GT(s.spec_num_accepted_tokens, 0);
  EXPECT_LT(s.spec_num_accepted_tokens, s.spec_num_draft_tokens);  // some rejected: the rollback ran
  EXPECT_EQ(s.kv.num_used_blocks, 0);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, EngineSpecKvTypesTest,
                         ::testing::Values(KvCacheTypes(KvDType::kF32), KvCacheTypes(KvDType::kBF16),
                                           KvCacheTypes(KvDType::kInt8), KvCacheTypes(KvDType::kF16, KvDType::kInt8)),
                         [](const ::testing::TestParamInfo<KvCacheTypes>& info) {
                           return std::string("K_") + kv_dtype_name(info.param.k) + "_V_" +
                                  kv_dtype_name(info.param.v);
                         });

TEST_F(EngineSpecTest, AdaptiveDraftLengthKeepsTheGreedyTextInABatch) {
  auto plain = make(config(256, 0));
  EngineConfig c = config(256, 6);
  c.scheduler.adaptive_num_speculative_tokens = true;
  auto spec = make(c);
  ASSERT_TRUE(plain && spec);
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  const std::vector<RequestOutput> out = run_batch(*spec, requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(out[i].new_tokens, reference[i].new_tokens) << "request " << i;
  EXPECT_EQ(spec->stats().kv.num_used_blocks, 0);
}

TEST_F(EngineSpecTest, EachOutputCarriesOneTokenAndItsOwnText) {
  auto spec = make(config(64, 6));
  ASSERT_TRUE(spec);
  GenerateRequest r = greedy("Once upon a time", 120);
  auto h = spec->submit(r);
  ASSERT_TRUE(h.ok());
  std::string text;
  std::vector<TokenId> tokens;
  for (;;) {
    std::optional<RequestOutput> o = h->stream->next(10s);
    ASSERT_TRUE(o);
    if (!o->new_tokens.empty()) {
      ASSERT_EQ(o->new_tokens.size(), 1u);
      tokens.push_back(o->new_tokens[0]);
    }
    text += o->text;
    if (o->finished) break;
  }
  EXPECT_GT(spec->stats().spec_num_accepted_tokens, 0);
  // The text so far after each token is the decoded tokens so far (the bundled vocabulary has no partial UTF-8
  // pieces in these stories), so the concatenation is the whole text.
  EXPECT_EQ(text, loaded_->tokenizer->decode(tokens));
}

TEST_F(EngineSpecTest, StopStringsAndLogprobsAreThoseWithoutSpeculation) {
  auto plain = make(config(64, 0));
  auto spec = make(config(64, 4));
  ASSERT_TRUE(plain && spec);
  GenerateRequest r = greedy("Once upon a time", 100);
  r.sampling.logprobs = 2;
  const RequestOutput full = run_batch(*plain, {r})[0];
  ASSERT_GT(full.text.size(), 60u);
  const RequestOutput full_spec = run_batch(*spec, {r})[0];
  ASSERT_EQ(full_spec.logprobs.size(), full.logprobs.size());
  for (size_t i = 0; i < full.logprobs.size(); ++i) {
    EXPECT_EQ(full_spec.logprobs[i].token, full.logprobs[i].token);
    EXPECT_EQ(full_spec.logprobs[i].logprob, full.logprobs[i].logprob) << "token " << i;
    EXPECT_EQ(full_spec.logprobs[i].top, full.logprobs[i].top) << "token " << i;
  }
  // A stop string late in the text, where drafts are long: the cut is the same.
  r.sampling.stop = {full.text.substr(50, 5)};
  const RequestOutput cut = run_batch(*plain, {r})[0];
  const RequestOutput cut_spec = run_batch(*spec, {r})[0];
  EXPECT_EQ(cut_spec.finish_reason, FinishReason::kStop);
  EXPECT_EQ(cut_spec.text, cut.text);
  EXPECT_EQ(cut_spec.new_tokens, cut.new_tokens);
  EXPECT_EQ(spec->stats().kv.num_used_blocks, 0);
}

TEST_F(EngineSpecTest, SampledRequestsRunToTheirEndAndGiveEveryBlockBack) {
  auto spec = make(config(64, 4));
  ASSERT_TRUE(spec);
  std::vector<GenerateRequest> requests = mixed_requests();
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling.temperature = 0.7f;
    requests[i].sampling.top_k = 20;
    requests[i].sampling.seed = 100 + i;
    requests[i].sampling.ignore_eos = true;
  }
  const std::vector<RequestOutput> out = run_batch(*spec, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_TRUE(out[i].finished);
    EXPECT_EQ(out[i].finish_reason, FinishReason::kLength);
    EXPECT_EQ(int32_t(out[i].new_tokens.size()), requests[i].sampling.max_tokens) << "request " << i;
  }
  const EngineStats s = spec->stats();
  EXPECT_GT(s.spec_num_draft_tokens, 0);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
}

TEST_F(EngineSpecTest, NgramHistoryDraftsFromEarlierOutputsAndKeepsTheGreedyText) {
  auto plain = make(config(256, 0));
  EngineConfig c = config(256, 5);
  auto lookup_only = make(c);
  c.spec.ngram_history = 4096;
  auto learning = make(c);
  ASSERT_TRUE(plain && lookup_only && learning);
  const GenerateRequest r = greedy("Once upon a time, there was a big dog", 150);
  const std::vector<RequestOutput> reference = run_batch(*plain, {r});
  // The same request twice on each: prompt lookup alone accepts the same drafts both times; with the history the
  // second run also drafts from the first's output where the sequence has no match of its own.
  int64_t accepted[2][2] = {};
  for (int run = 0; run < 2; ++run) {
    for (int which = 0; which < 2; ++which) {
      Engine& e = which == 0 ? *lookup_only : *learning;
      const int64_t before = e.stats().spec_num_accepted_tokens;
      const std::vector<RequestOutput> out = run_batch(e, {r});
      EXPECT_EQ(out[0].new_tokens, reference[0].new_tokens) << "run " << run << (which ? " learning" : " lookup");
      accepted[which][run] = e.stats().spec_num_accepted_tokens - before;
    }
  }
  EXPECT_EQ(accepted[0][1], accepted[0][0]);
  EXPECT_EQ(accepted[1][0], accepted[0][0]);  // nothing learned before the first run ended
  EXPECT_GT(accepted[1][1], accepted[1][0]);
  EXPECT_EQ(learning->stats().kv.num_used_blocks, 0);
  c.spec.method = SpecMethod::kNone;  // a history without n-gram drafts is refused
  c.scheduler.num_speculative_tokens = 0;
  EXPECT_FALSE(Engine::create(*loaded_->model, *loaded_->tokenizer, c).ok());
}

TEST_F(EngineSpecTest, CreateRefusesSpeculativeTokensWithoutAMethodAndBadCounts) {
  EngineConfig c = config(64, 0);
  c.scheduler.num_speculative_tokens = 3;
  EXPECT_FALSE(Engine::create(*loaded_->model, *loaded_->tokenizer, c).ok());
  c = config(64, 4);
  c.scheduler.num_speculative_tokens = 0;
  EXPECT_FALSE(Engine::create(*loaded_->model, *loaded_->tokenizer, c).ok());
  c = config(64, 4);
  c.spec.ngram_min = 3;
  c.spec.ngram_max = 2;
  EXPECT_FALSE(Engine::create(*loaded_->model, *loaded_->tokenizer, c).ok());
}

TEST_F(EngineSpecTest, DraftModelGreedyTextIsTheTextWithoutSpeculationAloneInABatchAndUnderPreemption) {
  const PerturbedModel wrong_every_third(*loaded_->model, 3);
  auto plain = make(config(256, 0));
  auto self = make(draft_config(256, 4, *loaded_->model));
  auto wrong = make(draft_config(256, 4, wrong_every_third));
  auto tiny = make(draft_config(40, 4, wrong_every_third, 4));  // 160 slots for 16 requests of up to ~120 tokens
  ASSERT_TRUE(plain && self && wrong && tiny);
  const std::vector<GenerateRequest> requests = mixed_requests();
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  for (size_t i = 0; i < 3; ++i) {
    const RequestOutput alone = run_batch(*self, {requests[i]})[0];
    EXPECT_EQ(alone.new_tokens, reference[i].new_tokens) << "request " << i << " alone";
    EXPECT_EQ(alone.text, reference[i].text) << "request " << i << " alone";
  }
  for (Engine* engine : {wrong.get(), tiny.get()}) {
    const std::vector<RequestOutput> out = run_batch(*engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(out[i].new_tokens, reference[i].new_tokens) << "request " << i << " in a batch";
    EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
  }
  // Drafting for itself, every draft is the target's own greedy token.
  const EngineStats s = self->stats();
  EXPECT_GT(s.spec_num_draft_tokens, 0);
  EXPECT_EQ(s.spec_num_accepted_tokens, s.spec_num_draft_tokens);
  // Wrong at every third position: some drafts accepted, some rejected (the rollback ran).
  const EngineStats w = wrong->stats();
  EXPECT_GT(w.spec_num_accepted_tokens, 0);
  EXPECT_LT(w.spec_num_accepted_tokens, w.spec_num_draft_tokens);
  EXPECT_GT(tiny->stats().num_preemptions, 0);
  EXPECT_GT(tiny->stats().spec_num_accepted_tokens, 0);
}

TEST_F(EngineSpecTest, CreateRefusesADraftModelThatIsMissingHasAnotherVocabularyOrNoRoom) {
  EngineConfig c = draft_config(64, 4, *loaded_->model);
  c.spec.draft_model = nullptr;
  EXPECT_FALSE(Engine::create(*loaded_->model, *loaded_->tokenizer, c).ok());
  PerturbedModel other_vocab(*loaded_->model, 3);
  other_vocab.mutable_config().vocab_size += 1;
  auto e = Engine::create(*loaded_->model, *loaded_->tokenizer, draft_config(64, 4, other_vocab));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("vocabulary"), std::string::npos) << e.error();
  c = draft_config(64, 4, *loaded_->model);
  c.spec.draft_kv_blocks = 3;  // one sequence of 256 + 4 tokens needs 17 blocks of 16
  e = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("17 blocks"), std::string::npos) << e.error();
  // The draft's own KV types: q8_0 needs heads of 32 values, the bundled model's have 8.
  c = draft_config(64, 4, *loaded_->model);
  c.spec.draft_kv_types = KvCacheTypes(KvDType::kQ8_0, KvDType::kF16);
  e = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("draft model's q8_0 KV cache"), std::string::npos) << e.error();
}

TEST_F(EngineSpecTest, ADraftModelKeepsItsKvInItsOwnTypesWithTheTextUnchanged) {
  auto plain = make(config(256, 0));
  ASSERT_TRUE(plain);
  std::vector<GenerateRequest> requests = mixed_requests();
  requests.resize(std::min<size_t>(requests.size(), 4));
  const std::vector<RequestOutput> reference = run_batch(*plain, requests);
  for (const KvCacheTypes types : {KvCacheTypes(KvDType::kF32), KvCacheTypes(KvDType::kBF16, KvDType::kF16),
                                   KvCacheTypes(KvDType::kInt8)}) {
    EngineConfig c = draft_config(256, 4, *loaded_->model);
    c.spec.draft_kv_types = types;
    auto engine = make(c);
    ASSERT_TRUE(engine);
    const std::vector<RequestOutput> out = run_batch(*engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(out[i].new_tokens, reference[i].new_tokens) << kv_types_name(types) << ", request " << i;
    EXPECT_GT(engine->stats().spec_num_accepted_tokens, 0) << kv_types_name(types);
  }
}

}  // namespace
}  // namespace pagoda
