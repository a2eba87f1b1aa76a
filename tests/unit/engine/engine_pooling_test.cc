// Pooling requests (embeddings) through the Engine on the bundled model: the vector each pooling method returns
// equals the one computed from a direct forward pass over the whole prompt (tests/support-style oracle: one
// Model::forward call, every row's final hidden state), whether the prompt is prefilled whole or in chunks,
// alone or batched with generations, with a prefix-cache hit (last pooling) or under KV pressure that forces
// preemption; requests the engine cannot pool are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kv/kv_storage.h"
#include "loader/loaded_model.h"
#include "support/bundled_model_fixture.h"

namespace pagoda {
namespace {

class EnginePoolingTest : public BundledModelTest {
 protected:
  static EngineConfig config(int32_t num_blocks, int32_t max_batched_tokens) {
    EngineConfig c;
    c.max_seq_len = 256;
    c.scheduler.max_num_seqs = 4;
    c.scheduler.max_batched_tokens = max_batched_tokens;
    c.kv.num_blocks = num_blocks;
    c.kv.block_size = 4;
    c.num_threads = 2;
    c.pooling = true;
    return c;
  }
  static std::unique_ptr<Engine> make(const EngineConfig& c) {
    auto engine = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  static std::vector<TokenId> tokens(const std::string& text) { return loaded_->tokenizer->encode(text, true); }
  static GenerateRequest pooling(const std::vector<TokenId>& prompt, Pooling method) {
    GenerateRequest r;
    r.prompt = prompt;
    r.prefill_only = true;
    r.pooling = method;
    return r;
  }

  // The oracle: every prompt row's final hidden state from one forward call over the whole prompt, in its own KV.
  static std::vector<std::vector<float>> direct_hidden_rows(const std::vector<TokenId>& prompt) {
    const Model& model = *loaded_->model;
    const int32_t n = int32_t(prompt.size());
    const int32_t num_blocks = (n + 15) / 16;
    ThreadPool pool(1);
    KvStorage kv(model.config().kv_shape(), num_blocks, 16, EngineConfig().kv_types);  // the engine's default types
    Workspace ws(model.config(), n, n, 1, 1, n);
    std::vector<BlockId> table(static_cast<size_t>(num_blocks));
    std::iota(table.begin(), table.end(), 0);
    std::vector<Pos> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    const std::vector<int32_t> slots(positions.begin(), positions.end()), seq_starts = {0, n}, context_lens = {n};
    const std::vector<int32_t> rows(positions.begin(), positions.end());
    BatchView batch;
    batch.tokens = prompt;
    batch.positions = positions;
    batch.slot_ids = slots;
    batch.seq_starts = seq_starts;
    batch.context_lens = context_lens;
    batch.block_tables = BlockTableView{table.data(), 1, num_blocks};
    batch.hidden_rows = rows;
    const LogitsView out = model.forward(batch, kv.view(), ws, pool);
    std::vector<std::vector<float>> result;
    for (int32_t r = 0; r < n; ++r) result.emplace_back(out.hidden_row(r).begin(), out.hidden_row(r).end());
    return result;
  }
  static std::vector<float> direct_pooled(const std::vector<TokenId>& prompt, Pooling method) {
    const std::vector<std::vector<float>> rows = direct_hidden_rows(prompt);
    if (method == Pooling::kLast) return rows.back();
    if (method == Pooling::kCls) return rows.front();
    std::vector<float> mean(rows[0].size(), 0.0f);
    for (const auto& row : rows)
      for (size_t i = 0; i < row.size(); ++i) mean[i] += row[i];
    for (float& v : mean) v /= float(rows.size());
    return mean;
  }
  static void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    float max_diff = 0.0f;
    for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    EXPECT_LT(max_diff, 1e-4f) << what;
  }
};

const char* const kTexts[] = {"Once upon a time, there was a little girl named Lily. She loved to play outside",
                              "The cat", "Tom had a big red ball. He"};

TEST_F(EnginePoolingTest, EachMethodEqualsTheDirectForwardPassWholeOrChunkedAloneOrBatched) {
  for (int32_t budget : {256, 7}) {  // the prompt in one step, or in chunks of at most 7 tokens
    auto engine = make(config(256, budget));
    ASSERT_TRUE(engine);
    for (Pooling method : {Pooling::kLast, Pooling::kMean, Pooling::kCls}) {
      // Every text's request at once, between two generations that keep decoding while they prefill.
      std::vector<RequestHandle> handles;
      GenerateRequest gen;
      gen.prompt = tokens("One day");
      gen.sampling.temperature = 0.0f;
      gen.sampling.max_tokens = 30;
      auto before = engine->submit(gen);
      ASSERT_TRUE(before.ok()) << before.error();
      for (const char* text : kTexts) {
        auto h = engine->submit(pooling(tokens(text), method));
        ASSERT_TRUE(h.ok()) << h.error();
        handles.push_back(*h);
      }
      auto after = engine->submit(gen);
      ASSERT_TRUE(after.ok()) << after.error();
      for (size_t i = 0; i < handles.size(); ++i) {
        RequestOutput out = handles[i].stream->wait_all();
        const std::string what =
            std::string(pooling_name(method)) + " of '" + kTexts[i] + "', budget " + std::to_string(budget);
        EXPECT_TRUE(out.finished && out.finish_reason == FinishReason::kStop) << what;
        EXPECT_TRUE(out.new_tokens.empty() && out.text.empty()) << what;
        EXPECT_EQ(out.num_prompt_tokens, int32_t(tokens(kTexts[i]).size())) << what;
        expect_close(out.embedding, direct_pooled(tokens(kTexts[i]), method), what);
      }
      // The generations beside them are untouched: both greedy, both the same text.
      EXPECT_EQ(before->stream->wait_all().text, after->stream->wait_all().text);
    }
    EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
  }
}

TEST_F(EnginePoolingTest, LastPoolingTakesAPrefixHitAndGetsTheSameVector) {
  auto engine = make(config(256, 64));
  ASSERT_TRUE(engine);
  const std::vector<TokenId> prompt = tokens(kTexts[0]);
  RequestOutput first = engine->submit(pooling(prompt, Pooling::kLast))->stream->wait_all();
  RequestOutput second = engine->submit(pooling(prompt, Pooling::kLast))->stream->wait_all();
  EXPECT_EQ(first.num_cached_tokens, 0);
  EXPECT_GT(second.num_cached_tokens, 0);
  expect_close(second.embedding, first.embedding, "with a prefix hit");
  // Mean pooling reads every row: it takes no hit.
  RequestOutput mean = engine->submit(pooling(prompt, Pooling::kMean))->stream->wait_all();
  EXPECT_EQ(mean.num_cached_tokens, 0);
  expect_close(mean.embedding, direct_pooled(prompt, Pooling::kMean), "mean after the hit");
}

TEST_F(EnginePoolingTest, MeanPoolingUnderPreemptionCountsEachRowOnce) {
  // 12 blocks of 4 tokens, 5 tokens a step: two generations growing to 43 tokens each need the blocks the
  // prompts of the later (newer) pooling requests hold, so those are preempted mid-prefill and recomputed.
  auto engine = make(config(12, 5));
  ASSERT_TRUE(engine);
  GenerateRequest gen;
  gen.prompt = tokens("One day");
  gen.sampling.temperature = 0.0f;
  gen.sampling.max_tokens = 40;
  gen.sampling.ignore_eos = true;
  const std::vector<TokenId> prompt = tokens(kTexts[0]);
  // One batch, so the generations and the pooling requests meet in the pool whatever this thread's speed.
  std::vector<RequestHandle> all = *engine->submit_batch(
      {gen, gen, pooling(prompt, Pooling::kMean), pooling(prompt, Pooling::kMean), pooling(prompt, Pooling::kMean)});
  std::vector<RequestHandle> gens(all.begin(), all.begin() + 2), handles(all.begin() + 2, all.end());
  const std::vector<float> want = direct_pooled(prompt, Pooling::kMean);
  int32_t num_preempted = 0;
  for (RequestHandle& h : handles) {
    RequestOutput out = h.stream->wait_all();
    ASSERT_TRUE(out.timing);
    num_preempted += out.timing->num_preemptions;
    expect_close(out.embedding, want, "under KV pressure");
  }
  for (RequestHandle& h : gens) EXPECT_EQ(h.stream->wait_all().num_output_tokens, 40);
  EXPECT_GT(num_preempted, 0) << "no pooling request was preempted: the test no longer covers the recompute";
}

TEST_F(EnginePoolingTest, RequestsThatCannotPoolAreRefused) {
  EngineConfig without = config(64, 64);
  without.pooling = false;
  auto plain = make(without);
  ASSERT_TRUE(plain);
  auto refused = plain->submit(pooling(tokens("The cat"), Pooling::kLast));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.error().find("pooling"), std::string::npos) << refused.error();

  auto engine = make(config(64, 64));
  ASSERT_TRUE(engine);
  EXPECT_FALSE(engine->submit_samples(pooling(tokens("The cat"), Pooling::kLast), 2).ok());
  GenerateRequest with_logprobs = pooling(tokens("The cat"), Pooling::kMean);
  with_logprobs.sampling.logprobs = 0;
  EXPECT_FALSE(engine->submit(with_logprobs).ok());
  GenerateRequest not_prefill_only = pooling(tokens("The cat"), Pooling::kMean);
  not_prefill_only.prefill_only = false;
  auto generating = engine->submit(not_prefill_only);
  ASSERT_FALSE(generating.ok());
  EXPECT_NE(generating.error().find("prefill-only"), std::string::npos) << generating.error();
}

}  // namespace
}  // namespace pagoda
