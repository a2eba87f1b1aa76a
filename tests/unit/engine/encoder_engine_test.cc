// An encoder (gen-model's tiny BERT reranker, model/bert_model.h) through the Engine:
// - every pooling (mean, CLS, rank) equals a direct forward pass over the prompt alone, with several prompts
//   batched, even with a step budget smaller than the prompts together (each is computed whole, never chunked);
// - last pooling, which takes prefix-cache hits on a decoder, takes none here: a prompt sharing a prefix with an
//   earlier one gets the vector it gets alone (an encoder's K/V rows depend on the whole prompt);
// - rank pooling returns the classification head's score of the CLS row;
// - what an encoder cannot do is refused with a clear error: generation, a prompt longer than a step, rank pooling
//   on a model without a head.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"
#include "support/pooling_engine_fixture.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_bert_writer.h"

namespace pagoda {
namespace {

class EncoderEngineTest : public testing_support::TempDirTest {
 protected:
  LoadedModel load(const std::string& shape_name) {
    std::optional<synth::ModelShape> shape = synth::find_model_shape(shape_name);
    EXPECT_TRUE(shape.has_value());
    synth::RandomModelOptions o{*shape, format::GgmlType::kF32, 3, path(shape_name + ".gguf")};
    const Status written = synth::write_random_bert_model(o);
    EXPECT_TRUE(written.ok()) << written.message();
    auto loaded = load_model(o.output_path, kernels::best_kernels());
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    return std::move(*loaded);
  }
  static std::unique_ptr<Engine> make(const LoadedModel& m, int32_t max_batched_tokens) {
    // The prefix cache is asked for; an encoder's engine turns it off.
    return testing::make_pooling_engine(m, max_batched_tokens);
  }
  // The oracle: every row's final hidden state from one forward call over the prompt alone.
  static std::vector<std::vector<float>> direct_rows(const Model& model, const std::vector<TokenId>& prompt) {
    std::vector<int32_t> rows(prompt.size());
    std::iota(rows.begin(), rows.end(), 0);
    return testing::direct_hidden_rows(model, prompt, rows);
  }
  static void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    float m = 0.0f;
    for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(got[i] - want[i]));
    EXPECT_LT(m, 1e-5f) << what;
  }
};

TEST_F(EncoderEngineTest, PoolingsEqualTheDirectPassWithoutChunksOrPrefixHits) {
  const LoadedModel m = load("tiny-bert-reranker");
  auto engine = make(m, 16);  // less than the prompts below together: they take turns, each whole
  ASSERT_TRUE(engine);
  const std::vector<std::vector<TokenId>> prompts = {
      m.tokenizer->encode("the panda eats bamboo in china", true),
      m.tokenizer->encode("the panda eats bamboo in paris today", true),  // shares a prefix with the first
      m.tokenizer->encode("hello world", true)};
  for (Pooling method : {Pooling::kMean, Pooling::kCls, Pooling::kLast, Pooling::kRank}) {
    std::vector<RequestHandle> handles;
    for (const auto& p : prompts) {
      auto h = engine->submit(testing::pooling_request(p, method));
      ASSERT_TRUE(h.ok()) << h.error();
      handles.push_back(*h);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      const RequestOutput out = handles[i].stream->wait_all();
      const std::string what = std::string(pooling_name(method)) + " of prompt " + std::to_string(i);
      ASSERT_TRUE(out.finished && out.finish_reason == FinishReason::kStop) << what;
      EXPECT_EQ(out.num_cached_tokens, 0) << what;
      const auto rows = direct_rows(*m.model, prompts[i]);
      std::vector<float> want;
      if (method == Pooling::kCls) want = rows.front();
      if (method == Pooling::kLast) want = rows.back();
      if (method == Pooling::kMean) {
        want.assign(rows[0].size(), 0.0f);
        for (const auto& r : rows)
          for (size_t k = 0; k < r.size(); ++k) want[k] += r[k];
        for (float& v : want) v /= float(rows.size());
      }
      if (method == Pooling::kRank) {
        want.assign(1, 0.0f);
        m.model->rank(rows.front(), want);
      }
      expect_close(out.embedding, want, what);
    }
  }
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
}

TEST_F(EncoderEngineTest, WhatAnEncoderCannotDoIsRefused) {
  const LoadedModel reranker = load("tiny-bert-reranker");
  auto engine = make(reranker, 8);
  ASSERT_TRUE(engine);
  GenerateRequest gen;
  gen.prompt = {2, 60, 3};
  gen.sampling.max_tokens = 4;
  auto refused = engine->submit(gen);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("encoder"), std::string::npos) << refused.error();
  auto too_long = engine->submit(testing::pooling_request(std::vector<TokenId>(12, 60), Pooling::kMean));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kContextLengthExceeded);
  EXPECT_NE(too_long.error().find("at most 8"), std::string::npos) << too_long.error();

  const LoadedModel plain = load("tiny-bert");
  auto plain_engine = make(plain, 16);
  ASSERT_TRUE(plain_engine);
  auto no_head = plain_engine->submit(testing::pooling_request({2, 60, 3}, Pooling::kRank));
  ASSERT_FALSE(no_head.ok());
  EXPECT_NE(no_head.error().find("classification head"), std::string::npos) << no_head.error();
}

}  // namespace
}  // namespace pagoda
