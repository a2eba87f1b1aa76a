// A decoder reranker (Qwen3-Reranker as llama.cpp's converter writes it; synth's tiny-qwen3-reranker, random
// weights) through the Engine:
// - the GGUF carries what llama.cpp reads: qwen3.pooling_type 4 (rank), the labels yes and no, the rerank template
//   and cls.output.weight [dim, 2]; the loaded model has a two-output head that reads the last token;
// - a rank-pooling request's scores are the softmax of cls.output times the last prompt token's final hidden state
//   (after the output norm) of a direct forward pass over the prompt alone, recomputed here in double from the
//   file's head rows, whole or with the prompt chunked over several steps, beside other requests;
// - a qwen3 file without the head has no rank outputs, and its rank requests are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "loader/loaded_model.h"
#include "support/pooling_engine_fixture.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class DecoderRerankerEngineTest : public testing_support::TempDirTest {
 protected:
  std::string write(const std::string& shape_name) {
    std::optional<synth::ModelShape> shape = synth::find_model_shape(shape_name);
    EXPECT_TRUE(shape.has_value());
    synth::RandomHfModelOptions o;
    o.shape = *shape;
    o.seed = 7;
    o.gguf = true;
    o.output_path = path(shape_name + ".gguf");
    const Status st = synth::write_random_hf_model(o);
    EXPECT_TRUE(st.ok()) << st.message();
    return o.output_path;
  }
  static LoadedModel load(const std::string& file) {
    auto loaded = load_model(file, kernels::best_kernels());
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    return std::move(*loaded);
  }
  static std::unique_ptr<Engine> make(const LoadedModel& m, int32_t max_batched_tokens) {
    // f32 K/V, as the direct pass's cache (testing::direct_hidden_rows).
    return testing::make_pooling_engine(m, max_batched_tokens,
                                        {.max_seq_len = 256, .num_blocks = 128, .kv_types = KvDType::kF32});
  }
  // The last prompt row's final hidden state from one forward call over the prompt alone.
  static std::vector<float> last_hidden_row(const Model& model, const std::vector<TokenId>& prompt) {
    return testing::direct_hidden_rows(model, prompt, {int32_t(prompt.size()) - 1}).front();
  }
};

TEST_F(DecoderRerankerEngineTest, ScoresAreTheHeadsSoftmaxOfTheLastTokensHiddenState) {
  const std::string file = write("tiny-qwen3-reranker");
  auto gguf = format::GgufFile::open(file);
  ASSERT_TRUE(gguf.ok()) << gguf.error();
  auto pooling = gguf->get_u32("qwen3.pooling_type");
  ASSERT_TRUE(pooling.ok() && *pooling);
  EXPECT_EQ(**pooling, 4u);
  auto labels = gguf->get_string_array("qwen3.classifier.output_labels");
  ASSERT_TRUE(labels.ok() && *labels);
  EXPECT_EQ(**labels, (std::vector<std::string>{"yes", "no"}));
  auto rerank_template = gguf->get_string(format::gguf_key::kRerankTemplate);
  ASSERT_TRUE(rerank_template.ok() && *rerank_template);
  EXPECT_NE(std::string(**rerank_template).find("<Query>: {query}\n<Document>: {document}<|im_end|>"),
            std::string::npos);
  const format::GgufTensorInfo* head = gguf->find_tensor("cls.output.weight");
  ASSERT_NE(head, nullptr);
  ASSERT_EQ(head->dims, (std::vector<int64_t>{128, 2}));
  ASSERT_EQ(head->type, format::GgmlType::kF32);
  const float* head_rows = static_cast<const float*>(head->data);

  const LoadedModel m = load(file);
  ASSERT_EQ(m.model->num_rank_outputs(), 2);
  EXPECT_TRUE(m.model->rank_reads_last_token());
  const std::vector<std::vector<TokenId>> prompts = {
      m.tokenizer->encode("<Query>: what pandas eat\n<Document>: pandas eat bamboo", false),
      m.tokenizer->encode("<Query>: what pandas eat\n<Document>: the weather in paris today is fine", false),
      m.tokenizer->encode("hello", false)};
  for (int32_t budget : {256, 8}) {  // whole prompts, then chunks of 8 tokens over several steps
    auto engine = make(m, budget);
    ASSERT_TRUE(engine);
    std::vector<RequestHandle> handles;
    for (const auto& p : prompts) {
      auto h = engine->submit(testing::pooling_request(p, Pooling::kRank));
      ASSERT_TRUE(h.ok()) << h.error();
      handles.push_back(*h);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      const RequestOutput out = handles[i].stream->wait_all();
      const std::string what = "prompt " + std::to_string(i) + ", budget " + std::to_string(budget);
      ASSERT_TRUE(out.finished && out.finish_reason == FinishReason::kStop) << what;
      ASSERT_EQ(out.embedding.size(), 2u) << what;
      const std::vector<float> h = last_hidden_row(*m.model, prompts[i]);
      double logit[2] = {0.0, 0.0};
      for (int r = 0; r < 2; ++r)
        for (size_t k = 0; k < h.size(); ++k) logit[r] += double(head_rows[size_t(r) * h.size() + k]) * h[k];
      const double yes = 1.0 / (1.0 + std::exp(logit[1] - logit[0]));
      EXPECT_NEAR(out.embedding[0], yes, 1e-5) << what;
      EXPECT_NEAR(out.embedding[1], 1.0 - yes, 1e-5) << what;
    }
  }
}

TEST_F(DecoderRerankerEngineTest, AQwen3FileWithoutTheHeadRefusesRankRequests) {
  const LoadedModel m = load(write("tiny-qwen3"));
  EXPECT_EQ(m.model->num_rank_outputs(), 0);
  auto engine = make(m, 64);
  ASSERT_TRUE(engine);
  auto refused = engine->submit(testing::pooling_request(m.tokenizer->encode("hello", false), Pooling::kRank));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("no classification head"), std::string::npos) << refused.error();
}

}  // namespace
}  // namespace pagoda
