// The Engine on the bundled model: greedy output is the reference loop's (tests/support/reference_greedy.h) alone
// and inside a batch of mixed requests, under
// KV pressure that forces preemption, with and without prefix-cache hits; cancellation mid-prefill and
// mid-decode frees every block; concurrent submit/cancel from several threads leaves nothing behind.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "support/bundled_engine_fixture.h"
#include "support/reference_greedy.h"
#include "support/throwing_model.h"
#include "support/wrapped_model.h"

namespace pagoda {
namespace {

using namespace std::chrono_literals;

class EngineTest : public BundledEngineTest {
 protected:
  static std::vector<GenerateRequest> mixed_requests() { return BundledEngineTest::mixed_requests(8); }
};

TEST_F(EngineTest, GreedyTextAloneEqualsTheReferenceLoopsAndTheTextInABatchOf16) {
  auto engine = make(config(256));
  ASSERT_TRUE(engine);
  std::vector<GenerateRequest> requests = mixed_requests();
  // Reference: the plainest greedy loop over Model::forward, one request at a time.
  std::vector<std::vector<TokenId>> reference;
  for (const GenerateRequest& r : requests)
    reference.push_back(
        testing::reference_greedy(*loaded_->model, *loaded_->tokenizer, r.prompt, r.sampling.max_tokens));
  // Alone through the engine.
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestOutput out = run_alone(*engine, requests[i]);
    EXPECT_EQ(out.new_tokens, reference[i]) << "request " << i;
  }
  // All at once.
  auto queued = engine->submit_batch(requests);
  ASSERT_TRUE(queued.ok()) << queued.error();
  std::vector<RequestHandle>& handles = *queued;
  for (size_t i = 0; i < handles.size(); ++i) {
    RequestOutput out = handles[i].stream->wait_all();
    EXPECT_TRUE(out.finished);
    EXPECT_EQ(out.new_tokens, reference[i]) << "request " << i;
    EXPECT_EQ(out.text, loaded_->tokenizer->decode(
                            std::span<const TokenId>(out.new_tokens)
                                .first(out.new_tokens.size() - (out.finish_reason == FinishReason::kStop ? 1 : 0))));
  }
  EngineStats s = engine->stats();
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.num_running, 0);
  EXPECT_GT(s.kv.num_prefix_hit_tokens, 0);  // the second round found the first round's prompts
  // The prefill budget's histogram: one entry per step that decoded, those with prompt tokens above bucket 0.
  int64_t num_counted = 0;
  for (int64_t n : s.prefill_tokens_per_decode_step) num_counted += n;
  EXPECT_EQ(num_counted, s.num_steps_with_decodes);
  EXPECT_EQ(s.num_steps_with_decodes - s.prefill_tokens_per_decode_step[0], s.num_mixed_steps);
  EXPECT_GT(s.num_mixed_steps, 0);  // 16 prompts at once: later ones prefilled while earlier ones decoded
  EXPECT_GT(s.prefill_tokens_in_decode_steps, 0);
  EXPECT_LE(s.prefill_tokens_in_decode_steps, s.num_prefill_tokens);
}

// What touches the KV bytes, with every KV type the bundled model's heads of 8 allow (q8_0 and q4_0 need heads of
// 32: engine_kv_block_types_test.cc), and K and V of different types: a batch gives the reference loop's text of
// that type, preemption (blocks freed and recomputed) and prefix-cache hits (blocks another request wrote) change
// no token.
class EngineKvTypesTest : public EngineTest, public ::testing::WithParamInterface<KvCacheTypes> {
 protected:
  static EngineConfig typed_config(int32_t num_blocks, int32_t block_size = 16) {
    EngineConfig c = config(num_blocks, block_size);
    c.kv_types = GetParam();
    return c;
  }
};

TEST_P(EngineKvTypesTest, ABatchGivesTheReferenceLoopsTextOfItsType) {
  auto engine = make(typed_config(256));
  ASSERT_TRUE(engine);
  std::vector<GenerateRequest> requests = mixed_requests();
  std::vector<RequestHandle> handles;
  for (const GenerateRequest& r : requests) handles.push_back(*engine->submit(r));
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::vector<TokenId> reference = testing::reference_greedy(
        *loaded_->model, *loaded_->tokenizer, requests[i].prompt, requests[i].sampling.max_tokens, GetParam());
    EXPECT_EQ(handles[i].stream->wait_all().new_tokens, reference) << "request " << i;
  }
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
}

TEST_P(EngineKvTypesTest, PreemptionUnderATinyPoolKeepsEveryText) {
  auto roomy = make(typed_config(256, 4));
  auto tiny = make(typed_config(40, 4));  // 160 slots for 16 requests of up to ~100 tokens each
  ASSERT_TRUE(roomy && tiny);
  std::vector<GenerateRequest> requests = mixed_requests();
  std::vector<RequestHandle> a = *roomy->submit_batch(requests), b = *tiny->submit_batch(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestOutput x = a[i].stream->wait_all(), y = b[i].stream->wait_all();
    EXPECT_EQ(x.new_tokens, y.new_tokens) << "request " << i;
  }
  EXPECT_GT(tiny->stats().num_preemptions, 0);
  EXPECT_EQ(tiny->stats().kv.num_used_blocks, 0);
}

TEST_P(EngineKvTypesTest, PrefixCacheHitsDoNotChangeTheText) {
  auto cached = make(typed_config(256));
  EngineConfig off = typed_config(256);
  off.kv.enable_prefix_cache = false;
  auto uncached = make(off);
  ASSERT_TRUE(cached && uncached);
  const std::string prefix =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day";
  run_alone(*cached, greedy(prefix + ", she saw a big dog.", 40));
  RequestOutput second = run_alone(*cached, greedy(prefix + ", her mom said", 40));
  RequestOutput reference = run_alone(*uncached, greedy(prefix + ", her mom said", 40));
  EXPECT_GE(second.num_cached_tokens, 16);
  EXPECT_EQ(second.new_tokens, reference.new_tokens);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, EngineKvTypesTest,
                         ::testing::Values(KvCacheTypes(KvDType::kF32), KvCacheTypes(KvDType::kF16),
                                           KvCacheTypes(KvDType::kBF16), KvCacheTypes(KvDType::kInt8),
                                           KvCacheTypes(KvDType::kF16, KvDType::kInt8)),
                         [](const ::testing::TestParamInfo<KvCacheTypes>& info) {
                           return std::string("K_") + kv_dtype_name(info.param.k) + "_V_" + kv_dtype_name(info.param.v);
                         });

TEST_F(EngineTest, CreateRefusesABlockTypeTheModelsHeadsCannotHold) {
  EngineConfig c = config(64);
  c.kv_types = KvCacheTypes(KvDType::kF16, KvDType::kQ8_0);
  auto engine = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error(),
            "q8_0 KV cache needs heads of a multiple of 32 values; this model's have 8 (use f16, bf16, "
            "int8 or f32)");
}

TEST_F(EngineTest, CancelMidPrefillAndMidDecodeFreesEveryBlock) {
  EngineConfig c = config(64);
  c.scheduler.max_batched_tokens = 1;  // a 200-token prompt takes 200 steps
  c.scheduler.max_num_seqs = 1;
  auto engine = make(c);
  ASSERT_TRUE(engine);
  GenerateRequest r = greedy("Once upon a time", 1000);
  r.prompt.resize(200, r.prompt.back());
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 50;
  auto h = engine->submit(r);
  ASSERT_TRUE(h.ok());
  while (engine->stats().num_steps < 5) std::this_thread::sleep_for(100us);
  engine->cancel(h->id);
  RequestOutput out = h->stream->wait_all();
  EXPECT_EQ(out.finish_reason, FinishReason::kAbort);
  EXPECT_EQ(out.num_output_tokens, 0);  // still prefilling when cancelled
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);

  GenerateRequest d = greedy("Once upon a time", 200);
  d.sampling.ignore_eos = true;
  auto h2 = engine->submit(d);
  ASSERT_TRUE(h2.ok());
  std::optional<RequestOutput> first = h2->stream->next(10s);
  ASSERT_TRUE(first && !first->new_tokens.empty());
  engine->cancel(h2->id);
  RequestOutput rest = h2->stream->wait_all();
  EXPECT_EQ(rest.finish_reason, FinishReason::kAbort);
  EXPECT_LT(rest.num_output_tokens, 200);
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
  EXPECT_EQ(engine->stats().num_running, 0);
}

TEST_F(EngineTest, SubmitRefusesWhatCanNeverRunAndAFullQueue) {
  EngineConfig c = config(8);  // 128 slots
  c.max_queue = 2;
  auto engine = make(c);
  ASSERT_TRUE(engine);
  GenerateRequest empty;
  EXPECT_EQ(engine->submit(empty).status().code(), StatusCode::kInvalidArgument);
  GenerateRequest bad = greedy("x", 4);
  bad.prompt.push_back(100000);
  EXPECT_EQ(engine->submit(bad).status().code(), StatusCode::kInvalidArgument);
  GenerateRequest too_long = greedy("x", 4);
  too_long.prompt.resize(300, 1);
  EXPECT_EQ(engine->submit(too_long).status().code(), StatusCode::kContextLengthExceeded);
  GenerateRequest too_big = greedy("x", 200);  // 200 tokens of output need 13 blocks of 16
  EXPECT_EQ(engine->submit(too_big).status().code(), StatusCode::kInvalidArgument);
  GenerateRequest bad_sampling = greedy("x", 4);
  bad_sampling.sampling.top_p = 2.0f;
  EXPECT_EQ(engine->submit(bad_sampling).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, SubmitBatchQueuesAllOrNoneAndTheFirstStepSeesEveryOne) {
  EngineConfig c = config(64, 4);
  c.max_queue = 3;
  auto engine = make(c);
  ASSERT_TRUE(engine);
  GenerateRequest bad = greedy("x", 4);
  bad.prompt.push_back(100000);
  auto refused = engine->submit_batch({greedy("The cat", 4), bad, greedy("The sun", 4)});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.error().find("request 1 of the batch"), std::string::npos) << refused.error();
  auto too_many = engine->submit_batch(std::vector<GenerateRequest>(4, greedy("The cat", 4)));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(engine->stats().num_waiting, 0);  // neither batch left anything queued
  EXPECT_EQ(engine->stats().num_steps, 0);
  // Three that fit: in order, and all three in the first step (each prompt fits the step's token budget).
  const std::vector<GenerateRequest> three = {greedy("The cat", 4), greedy("The sun", 5), greedy("One day", 6)};
  auto queued = engine->submit_batch(three);
  ASSERT_TRUE(queued.ok()) << queued.error();
  ASSERT_EQ(queued->size(), 3u);
  size_t longest = 0;
  for (size_t i = 0; i < three.size(); ++i) {
    EXPECT_EQ((*queued)[i].id, (*queued)[0].id + RequestId(i));
    const RequestOutput out = (*queued)[i].stream->wait_all();
    EXPECT_EQ(out.new_tokens, testing::reference_greedy(*loaded_->model, *loaded_->tokenizer, three[i].prompt,
                                                        three[i].sampling.max_tokens));
    longest = std::max(longest, out.new_tokens.size());
  }
  EXPECT_EQ(engine->stats().peak_num_running, 3);
  // One step prefills the three and samples their first tokens; each later token is one decode step.
  EXPECT_EQ(engine->stats().num_steps, int64_t(longest));
}

TEST_F(EngineTest, CreateRefusesAStepBudgetSmallerThanTheBatch) {
  EngineConfig c = config(8);
  c.scheduler.max_batched_tokens = c.scheduler.max_num_seqs - 1;  // the newest sequence could never decode
  auto engine = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.error().find("must be at least batch_size"), std::string::npos) << engine.error();
}

TEST_F(EngineTest, RandomSubmitAndCancelFromFourThreadsLeaveNothingBehind) {
  EngineConfig c = config(48, 4);  // tight, so preemption happens too
  c.max_seq_len = 128;
  auto engine = make(c);
  ASSERT_TRUE(engine);
  std::atomic<int32_t> num_finished{0}, num_refused{0};
  auto worker = [&](uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<RequestHandle> mine;
    for (int op = 0; op < 250; ++op) {
      if (mine.empty() || rng() % 3 != 0) {
        GenerateRequest r = greedy(rng() % 2 ? "Once upon a time" : "The dog ran", 1 + int32_t(rng() % 40));
        r.sampling.temperature = 0.8f;
        r.sampling.seed = rng();
        auto h = engine->submit(r);
        if (h.ok()) {
          mine.push_back(*h);
        } else {
          ++num_refused;
        }
      } else {
        engine->cancel(mine[rng() % mine.size()].id);
      }
      if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
    }
    for (RequestHandle& h : mine) {
      RequestOutput out = h.stream->wait_all();
      if (out.finished) ++num_finished;
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back(worker, 1234 + t);
  for (std::thread& t : threads) t.join();
  EXPECT_GT(num_finished.load(), 0);
  EngineStats s = engine->stats();
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(s.num_waiting, 0);
  EXPECT_EQ(s.num_finished_stop + s.num_finished_length + s.num_finished_abort, int64_t(num_finished.load()));
}

TEST_F(EngineTest, ShutdownAbortsWhatIsStillRunning) {
  RequestHandle h;
  {
    auto engine = make(config(64));
    ASSERT_TRUE(engine);
    GenerateRequest r = greedy("Once upon a time", 250);
    r.sampling.ignore_eos = true;
    h = *engine->submit(r);
  }
  RequestOutput out = h.stream->wait_all();
  EXPECT_TRUE(out.finished);
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST_F(EngineTest, LogprobsComeWithEveryTokenAndGreedyPicksTheMostLikely) {
  std::unique_ptr<Engine> engine = make(config(64));
  GenerateRequest plain = greedy("Once upon a time", 12);
  GenerateRequest with = plain;
  with.sampling.logprobs = 3;
  const RequestOutput a = engine->submit(plain)->stream->wait_all();
  const RequestOutput b = engine->submit(with)->stream->wait_all();
  EXPECT_EQ(a.new_tokens, b.new_tokens);  // asking for logprobs changes nothing else
  EXPECT_TRUE(a.logprobs.empty());
  ASSERT_EQ(b.logprobs.size(), b.new_tokens.size());
  for (size_t i = 0; i < b.logprobs.size(); ++i) {
    EXPECT_EQ(b.logprobs[i].token, b.new_tokens[i]);
    ASSERT_EQ(b.logprobs[i].top.size(), 3u);
    EXPECT_EQ(b.logprobs[i].top[0].first, b.new_tokens[i]);
    EXPECT_FLOAT_EQ(b.logprobs[i].top[0].second, b.logprobs[i].logprob);
    EXPECT_LT(b.logprobs[i].logprob, 0.0f);
  }
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST_F(EngineTest, PromptAndOutputLogitsAreTheRowsTheModelComputedWhateverTheChunking) {
  EngineConfig c = config(64);
  c.prompt_logits = true;
  c.kv.enable_prefix_cache = false;
  EngineConfig chunked = c;
  chunked.scheduler.max_batched_tokens = 32;  // a batch of 32 sequences needs 32 tokens a step
  chunked.scheduler.max_prefill_tokens_with_decodes = 3;
  auto whole = make(c);
  auto pieces = make(chunked);
  ASSERT_TRUE(whole && pieces);
  GenerateRequest r = greedy("Once upon a time, there was a little girl named Lily. She loved to play", 5);
  r.sampling.ignore_eos = true;
  r.prompt_logits_start = 3;
  r.output_logits = true;
  // While another stream decodes, the prompt goes 3 tokens a step.
  GenerateRequest other = greedy("The cat", 60);
  other.sampling.ignore_eos = true;
  auto busy = pieces->submit(other);
  ASSERT_TRUE(busy.ok());
  while (pieces->stats().num_generation_tokens < 2) std::this_thread::sleep_for(100us);
  const RequestOutput a = run_alone(*whole, r), b = run_alone(*pieces, r);
  busy->stream->wait_all();
  const size_t vocab = size_t(loaded_->model->config().vocab_size);
  const size_t num_rows = r.prompt.size() - 3;
  ASSERT_EQ(a.prompt_logits.size(), num_rows * vocab);
  ASSERT_EQ(b.prompt_logits.size(), num_rows * vocab);
  for (size_t i = 0; i < a.prompt_logits.size(); ++i)
    ASSERT_NEAR(a.prompt_logits[i], b.prompt_logits[i], 1e-4f * (1.0f + std::fabs(a.prompt_logits[i]))) << i;
  // Each output token was sampled (greedily) from its row; the first row is the prompt's last.
  ASSERT_EQ(a.logits.size(), a.new_tokens.size() * vocab);
  for (size_t t = 0; t < a.new_tokens.size(); ++t) {
    const auto row = std::span<const float>(a.logits).subspan(t * vocab, vocab);
    EXPECT_EQ(TokenId(std::max_element(row.begin(), row.end()) - row.begin()), a.new_tokens[t]) << t;
  }
  EXPECT_TRUE(std::equal(a.logits.begin(), a.logits.begin() + int64_t(vocab), a.prompt_logits.end() - int64_t(vocab)));
  EXPECT_EQ(pieces->stats().kv.num_used_blocks, 0);
}

TEST_F(EngineTest, PromptLogprobsAreTheLogSoftmaxOfThePromptRowsForEveryChunkingAndEverySample) {
  EngineConfig c = config(64);
  c.prompt_logits = true;
  EngineConfig chunked = c;
  chunked.scheduler.max_batched_tokens = 32;
  chunked.scheduler.max_prefill_tokens_with_decodes = 3;
  auto whole = make(c);
  auto pieces = make(chunked);
  ASSERT_TRUE(whole && pieces);
  GenerateRequest raw = greedy("Once upon a time, there was a little girl named Lily. She loved to play", 3);
  raw.prompt_logits_start = 0;
  const RequestOutput rows = run_alone(*whole, raw);
  const size_t vocab = size_t(loaded_->model->config().vocab_size);
  const size_t num_prompt = raw.prompt.size();
  ASSERT_EQ(rows.prompt_logits.size(), num_prompt * vocab);

  GenerateRequest r = raw;
  r.prompt_logits_start = -1;
  r.prompt_logprobs = 4;
  // Twice on each engine: the second run finds the first one's blocks in the prefix cache and must not use them.
  for (Engine* engine : {whole.get(), pieces.get(), whole.get(), pieces.get()}) {
    GenerateRequest other = greedy("The cat", 40);
    other.sampling.ignore_eos = true;
    auto busy = engine->submit(other);  // decodes beside the prompt, which then goes in chunks on `pieces`
    ASSERT_TRUE(busy.ok());
    auto samples = engine->submit_samples(r, 2);
    ASSERT_TRUE(samples.ok()) << samples.error();
    for (RequestHandle& h : *samples) {
      const RequestOutput out = h.stream->wait_all();
      ASSERT_EQ(out.prompt_logprobs.size(), num_prompt - 1);
      EXPECT_EQ(out.new_tokens, rows.new_tokens);
      for (size_t i = 0; i + 1 < num_prompt; ++i) {
        const TokenLogprobs want = compute_token_logprobs(
            std::span<const float>(rows.prompt_logits).subspan(i * vocab, vocab), r.prompt[i + 1], 4);
        const TokenLogprobs& got = out.prompt_logprobs[i];
        EXPECT_EQ(got.token, r.prompt[i + 1]);
        EXPECT_NEAR(got.logprob, want.logprob, 1e-4) << i;
        EXPECT_EQ(got.rank, want.rank) << i;
        ASSERT_EQ(got.top.size(), 4u);
        for (size_t k = 0; k < 4; ++k) EXPECT_EQ(got.top[k].first, want.top[k].first) << i << " " << k;
      }
    }
    busy->stream->wait_all();
    EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
  }
  GenerateRequest both = r;
  both.prompt_logits_start = 0;
  EXPECT_EQ(whole->submit(both).status().code(), StatusCode::kInvalidArgument);
  auto plain = make(config(64));
  EXPECT_EQ(plain->submit(r).status().code(), StatusCode::kInvalidArgument);  // made without prompt logits
}

TEST_F(EngineTest, APrefillOnlyRequestSamplesNothingAndEndsWithItsPromptRows) {
  EngineConfig c = config(16);  // 256 slots, the context
  c.prompt_logits = true;
  c.scheduler.max_batched_tokens = 32;
  c.scheduler.max_prefill_tokens_with_decodes = 3;
  auto engine = make(c);
  ASSERT_TRUE(engine);
  GenerateRequest scored = greedy("Once upon a time, there was a little girl named Lily. She loved to play", 3);
  scored.prompt_logits_start = 0;
  const RequestOutput rows = run_alone(*engine, scored);
  const size_t vocab = size_t(loaded_->model->config().vocab_size);
  const size_t num_prompt = scored.prompt.size();

  GenerateRequest r = scored;
  r.prompt_logits_start = -1;
  r.prompt_logprobs = 2;
  r.prefill_only = true;
  r.sampling.max_tokens = 0;  // not read
  // Beside a decoding stream, so the prompt goes in chunks.
  const int64_t generated_before = engine->stats().num_generation_tokens;
  GenerateRequest other = greedy("The cat", 40);
  other.sampling.ignore_eos = true;
  auto busy = engine->submit(other);
  ASSERT_TRUE(busy.ok());
  auto h = engine->submit(r);
  ASSERT_TRUE(h.ok()) << h.error();
  std::vector<RequestOutput> outs;
  for (;;) {
    std::optional<RequestOutput> o = h->stream->next(std::chrono::milliseconds(30000));
    ASSERT_TRUE(o.has_value()) << "no event in 30 s";
    outs.push_back(std::move(*o));
    if (outs.back().finished) break;
  }
  ASSERT_EQ(outs.size(), 1u) << "a prefill-only request ends in one event";
  const RequestOutput& out = outs.front();
  EXPECT_TRUE(out.new_tokens.empty());
  EXPECT_TRUE(out.text.empty());
  EXPECT_EQ(out.num_output_tokens, 0);
  EXPECT_EQ(out.finish_reason, FinishReason::kStop);
  ASSERT_TRUE(out.timing.has_value());
  EXPECT_GE(out.timing->first_token_us, out.timing->first_scheduled_us);  // its "first output": the prompt computed
  EXPECT_TRUE(out.timing->token_us.empty());
  ASSERT_EQ(out.prompt_logprobs.size(), num_prompt - 1);
  for (size_t i = 0; i + 1 < num_prompt; ++i) {
    const TokenLogprobs want = compute_token_logprobs(
        std::span<const float>(rows.prompt_logits).subspan(i * vocab, vocab), r.prompt[i + 1], 2);
    EXPECT_NEAR(out.prompt_logprobs[i].logprob, want.logprob, 1e-4) << i;
  }
  busy->stream->wait_all();
  EXPECT_EQ(engine->stats().num_generation_tokens - generated_before, 40) << "only the generation sampled";
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);

  // Its KV is sized for the prompt: a prompt that fills the context is computed, where a generation is refused.
  GenerateRequest full = greedy("x", 4);
  full.prompt.resize(256, 1);
  EXPECT_EQ(engine->submit(full).status().code(), StatusCode::kContextLengthExceeded);
  full.prefill_only = true;
  auto filled = engine->submit(full);
  ASSERT_TRUE(filled.ok()) << filled.error();
  const RequestOutput whole = filled->stream->wait_all();
  EXPECT_EQ(whole.finish_reason, FinishReason::kStop);
  EXPECT_TRUE(whole.new_tokens.empty());

  // It samples nothing, so it asks for nothing sampled.
  GenerateRequest with_logprobs = greedy("The cat", 4);
  with_logprobs.prefill_only = true;
  with_logprobs.sampling.logprobs = 1;
  EXPECT_EQ(engine->submit(with_logprobs).status().code(), StatusCode::kInvalidArgument);
  GenerateRequest two = greedy("The cat", 4);
  two.prefill_only = true;
  EXPECT_EQ(engine->submit_samples(two, 2).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, WithoutATokenizerOutputsAreTokenIdsAndStopStringsAreRefused) {
  EngineConfig c = config(64);
  auto created = Engine::create(*loaded_->model, c);
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& ids_only = **created;
  auto with_text = make(c);
  GenerateRequest r = greedy("Once upon a time", 20);
  r.sampling.ignore_eos = true;
  const RequestOutput a = run_alone(ids_only, r), b = run_alone(*with_text, r);
  EXPECT_EQ(a.new_tokens, b.new_tokens);
  EXPECT_TRUE(a.text.empty());
  EXPECT_FALSE(b.text.empty());
  GenerateRequest stop = r;
  stop.sampling.stop = {"."};
  EXPECT_EQ(ids_only.submit(stop).status().code(), StatusCode::kInvalidArgument);
  GenerateRequest scoring = r;
  scoring.prompt_logits_start = 0;  // this engine was not made for prompt logits
  EXPECT_EQ(ids_only.submit(scoring).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, AStopStringEndsTheRequestInTheStepItsTextCompletesAndFreesItsBlocks) {
  auto engine = make(config(64));
  GenerateRequest r = greedy("Once upon a time", 100);
  const RequestOutput full = run_alone(*engine, r);
  ASSERT_GT(full.text.size(), 20u);
  const std::string stop = full.text.substr(10, 4);
  r.sampling.stop = {stop};
  const RequestOutput cut = run_alone(*engine, r);
  EXPECT_EQ(cut.finish_reason, FinishReason::kStop);
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_LT(cut.num_output_tokens, full.num_output_tokens);
  EXPECT_EQ(cut.new_tokens,
            std::vector<TokenId>(full.new_tokens.begin(), full.new_tokens.begin() + cut.num_output_tokens));
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.num_finished_stop, 1 + (full.finish_reason == FinishReason::kStop ? 1 : 0));
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST_F(EngineTest, EightSamplesOfOnePromptArePrefilledOnceAndShareItsBlocks) {
  EngineConfig c = config(256);
  c.kv.enable_prefix_cache = false;  // sharing comes from the fork alone
  auto grouped = make(c);
  auto separate = make(c);
  ASSERT_TRUE(grouped && separate);
  GenerateRequest r = greedy(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, she",
      20);
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 5;
  r.sampling.ignore_eos = true;
  const int32_t num_prompt = int32_t(r.prompt.size());
  ASSERT_GT(num_prompt % 16, 0);  // a partial last block, written by every sample: copy on write

  Result<std::vector<RequestHandle>> handles = grouped->submit_samples(r, 8);
  ASSERT_TRUE(handles.ok()) << handles.error();
  ASSERT_EQ(handles->size(), 8u);
  std::vector<RequestOutput> samples;
  for (RequestHandle& h : *handles) samples.push_back(h.stream->wait_all());
  // The same requests one by one, seeds 5..12: each sample is its own seeded draw.
  for (int32_t i = 0; i < 8; ++i) {
    GenerateRequest one = r;
    one.sampling.seed = 5 + i;
    const RequestOutput alone = run_alone(*separate, one);
    EXPECT_EQ(samples[size_t(i)].new_tokens, alone.new_tokens) << "sample " << i;
    EXPECT_EQ(samples[size_t(i)].text, alone.text) << "sample " << i;
    EXPECT_EQ(samples[size_t(i)].num_prompt_tokens, num_prompt);
  }
  EXPECT_NE(samples[0].new_tokens, samples[1].new_tokens);

  // One prefill for the eight, and the prompt's full blocks held once.
  const EngineStats g = grouped->stats();
  EXPECT_EQ(g.num_prefill_tokens, num_prompt);
  EXPECT_EQ(g.num_prompt_tokens, num_prompt);
  EXPECT_EQ(g.num_generation_tokens, 8 * 20);
  EXPECT_EQ(separate->stats().num_prefill_tokens, 8 * num_prompt);
  const int32_t num_shared = num_prompt / 16;                      // full prompt blocks
  const int32_t num_per_sample = (num_prompt + 20 - 1 + 15) / 16;  // blocks one sequence of its length fills
  EXPECT_EQ(g.peak_num_used_blocks, num_shared + 8 * (num_per_sample - num_shared));
  EXPECT_EQ(g.kv.num_used_blocks, 0);
  EXPECT_EQ(g.num_running, 0);
  std::printf(
      "n = 8 on a %d-token prompt, 20 tokens each: prefill %lld tokens, peak %d KV blocks; "
      "8 separate requests one at a time: prefill %lld tokens, %d blocks each\n",
      num_prompt, static_cast<long long>(g.num_prefill_tokens), g.peak_num_used_blocks,
      static_cast<long long>(separate->stats().num_prefill_tokens), num_per_sample);
}

TEST_F(EngineTest, SamplesAreCancelledOneByOneAndGroupsNeverOutgrowTheBatch) {
  EngineConfig c = config(256);
  c.scheduler.max_num_seqs = 3;
  c.scheduler.max_batched_tokens = 8;  // the prompt over several steps
  auto engine = make(c);
  ASSERT_TRUE(engine);
  GenerateRequest r = greedy("Once upon a time, there was a little girl named Lily.", 30);
  r.sampling.ignore_eos = true;
  // 7 samples in groups of at most 3 (the batch): three prefills.
  Result<std::vector<RequestHandle>> handles = engine->submit_samples(r, 7);
  ASSERT_TRUE(handles.ok()) << handles.error();
  ASSERT_EQ(handles->size(), 7u);
  engine->cancel((*handles)[1].id);  // before or after its fork: either way it ends, alone
  std::vector<RequestOutput> outs;
  for (RequestHandle& h : *handles) outs.push_back(h.stream->wait_all());
  EXPECT_EQ(outs[1].finish_reason, FinishReason::kAbort);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i == 1) continue;
    EXPECT_EQ(outs[i].finish_reason, FinishReason::kLength) << i;
    EXPECT_EQ(outs[i].new_tokens, outs[0].new_tokens) << i;  // greedy: every sample the same text
  }
  const EngineStats s = engine->stats();
  EXPECT_LE(s.peak_num_running, 3);
  EXPECT_EQ(s.num_prefill_tokens, 3 * int64_t(r.prompt.size()));
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.num_running + s.num_waiting, 0);
  EXPECT_FALSE(engine->submit_samples(r, 0).ok());
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST_F(EngineTest, AStepThatThrowsEndsTheRequestsInFlightAndTheEngineGoesOn) {
  const ThrowingModel model(*loaded_->model, /*throw_at=*/5);
  EngineConfig c = config(64);
  c.scheduler.max_prefill_tokens_with_decodes = 8;  // a fixed budget: no calibration passes before the steps
  auto engine = Engine::create(model, *loaded_->tokenizer, c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  // Three samples of one prompt, queued at once: all are in flight when the fifth step throws (three separate
  // submits could reach the engine after it, on a loaded machine, and run to their end).
  GenerateRequest r = greedy("Once upon a time", 100);
  r.sampling.ignore_eos = true;
  std::vector<RequestHandle> handles = *(*engine)->submit_samples(r, 3);
  for (RequestHandle& h : handles) {
    const RequestOutput out = h.stream->wait_all();
    EXPECT_TRUE(out.finished);
    EXPECT_EQ(out.finish_reason, FinishReason::kAbort);
    EXPECT_LT(out.num_output_tokens, 100);
  }
  // Nothing leaked, and the next request runs to its end.
  const RequestOutput next = (*engine)->submit(greedy("Once upon a time", 8))->stream->wait_all();
  EXPECT_EQ(next.finish_reason, FinishReason::kLength);
  EXPECT_EQ(next.num_output_tokens, 8);
  const EngineStats s = (*engine)->stats();
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
}

// The bundled model, counting its forward passes and the sizes of their batches.
class CountingModel : public WrappedModel {
 public:
  using WrappedModel::WrappedModel;
  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                     ThreadPool& pool) const override {
    sizes.insert(batch.num_tokens());
    ++num_calls;
    return inner_.forward(batch, kv, workspace, pool);
  }
  mutable int num_calls = 0;
  mutable std::set<int32_t> sizes;
};

TEST_F(EngineTest, AnEngineThatPacesPromptsCalibratesItsStepModelAtCreationAndLeavesNoTrace) {
  // Several sequences, chunked prefill, the automatic prefill budget: forward passes of 1, 16 and 64 tokens (a
  // cold one-token pass, then two timed of each size) before any request. What they measure is timing, so this checks
  // that they ran and left nothing behind; the budget's use of a fitted model is prefill_budget_test's.
  const CountingModel counting(*loaded_->model);
  auto engine = Engine::create(counting, *loaded_->tokenizer, config(64));
  ASSERT_TRUE(engine.ok()) << engine.error();
  EXPECT_EQ(counting.num_calls, 7);
  EXPECT_EQ(counting.sizes, (std::set<int32_t>{1, 16, 64}));
  const EngineStats s = (*engine)->stats();
  EXPECT_EQ(s.num_steps, 0);
  EXPECT_EQ(s.num_prefill_tokens, 0);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
  EXPECT_EQ(s.kv.num_prefix_query_tokens, 0);
  EXPECT_EQ(s.kv.num_cached_blocks, 0);
  // The calibrated engine's text is the reference's.
  const GenerateRequest r = greedy("Once upon a time", 40);
  EXPECT_EQ(run_alone(**engine, r).new_tokens,
            testing::reference_greedy(*loaded_->model, *loaded_->tokenizer, r.prompt, 40));
  // A pass that throws (out of memory) leaves the fixed rule, and the engine is created all the same.
  const ThrowingModel throws_at_once(*loaded_->model, /*throw_at=*/1);
  auto failed = Engine::create(throws_at_once, *loaded_->tokenizer, config(64));
  ASSERT_TRUE(failed.ok()) << failed.error();
  EXPECT_EQ((*failed)->stats().step_time_per_token_us, 0.0);
  // A fixed budget, or one sequence at a time: nothing to pace, no passes.
  for (const auto& [cap, num_seqs] : {std::pair{8, 32}, std::pair{kAutoPrefillCap, 1}}) {
    EngineConfig c = config(64);
    c.scheduler.max_prefill_tokens_with_decodes = cap;
    c.scheduler.max_num_seqs = num_seqs;
    const CountingModel idle(*loaded_->model);
    ASSERT_TRUE(Engine::create(idle, *loaded_->tokenizer, c).ok());
    EXPECT_EQ(idle.num_calls, 0) << "cap " << cap << ", " << num_seqs << " sequences";
  }
}

}  // namespace
}  // namespace pagoda
