// The gpt-oss family (model/arch_gpt_oss.cc) on gen-model's tiny-gpt-oss GGUF (synth/random_gpt_oss_writer.h):
// - the family's keys become its switches (window on the even layers, YaRN, the router's top-k-then-softmax, the
//   clamped SwiGLU, the pre-FFN norm under its llama.cpp name), and every bias and sink tensor is loaded;
// - a prompt that runs past the 16-position window and the 32-position original context gives the same logits whole,
//   in chunks and one token at a time (each token's bits are its own), with the flash kernels and the naive reference
//   agreeing;
// - `pagoda quantize` quantizes the weights and keeps the biases (2-D for the experts), sinks and router as they are,
//   as llama.cpp's quantizer does, and the quantized file runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "format/gguf_quantizer.h"
#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "model/llama_model.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_gpt_oss_writer.h"
#include "support/chunked_prompt_logits.h"

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kPromptLength = 45;  // past the window (16) and the original context (32)

class GptOssTest : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-gpt-oss");
    ASSERT_TRUE(shape.has_value());
    gguf_path_ = path("tiny-gpt-oss.gguf");
    synth::RandomModelOptions o{*shape, format::GgmlType::kF32, 7, gguf_path_};
    const Status written = synth::write_random_gpt_oss_model(o);
    ASSERT_TRUE(written.ok()) << written.message();
    auto file = format::GgufFile::open(o.output_path);
    ASSERT_TRUE(file.ok()) << file.error();
    file_ = std::make_unique<format::GgufFile>(std::move(*file));
    for (int32_t i = 0; i < kPromptLength; ++i) prompt_.push_back(TokenId((i * 37 + 11) % 512));
  }

  std::unique_ptr<Model> model(const ModelOptions& options = {}) {
    auto m = create_model(*file_, kernels::best_kernels(), options);
    EXPECT_TRUE(m.ok()) << m.error();
    return m.ok() ? std::move(*m) : nullptr;
  }

  // Every prompt row's logits, the prompt fed `chunk` tokens a step into one sequence's blocks.
  std::vector<float> logits(const Model& m, int32_t chunk) const {
    return testing::chunked_prompt_logits(m, prompt_, chunk, {.block_size = kBlockSize, .blocks_reversed = true});
  }

  static float max_abs(const std::vector<float>& v) {
    float m = 0.0f;
    for (float x : v) m = std::max(m, std::fabs(x));
    return m;
  }
  static float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float m = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }

  std::string gguf_path_;
  std::unique_ptr<format::GgufFile> file_;
  std::vector<TokenId> prompt_;
};

TEST_F(GptOssTest, KeysBecomeTheFamilysSwitches) {
  auto c = model_config_from_gguf(*file_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "gpt-oss");
  EXPECT_TRUE(c->rope_neox);
  EXPECT_EQ(c->sliding_window, 16);
  EXPECT_EQ(c->layer_is_swa, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(c->rope_scaling, RopeScalingType::kYarn);
  EXPECT_EQ(c->rope_original_context, 32);
  EXPECT_FLOAT_EQ(c->rope_freq_scale, 1.0f / 32.0f);
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_used, 4);
  EXPECT_EQ(c->expert_hidden_dim, 64);
  EXPECT_FALSE(c->expert_weights_norm);
  EXPECT_TRUE(c->expert_softmax_after_topk);
  EXPECT_EQ(c->activation, FfnActivation::kSwigluOai);
  EXPECT_TRUE(c->ffn_norm_is_post_attention_norm);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->q_dim(), 256);

  auto w = model_weights_from_gguf(*file_, *c);
  ASSERT_TRUE(w.ok()) << w.error();
  for (const LayerWeights& lw : w->layers) {
    EXPECT_EQ(lw.bq.size(), 256u);
    EXPECT_EQ(lw.bk.size(), 32u);
    EXPECT_EQ(lw.bv.size(), 32u);
    EXPECT_EQ(lw.bo.size(), 128u);
    EXPECT_EQ(lw.sinks.size(), 8u);
    EXPECT_EQ(lw.ffn_norm.size(), 128u);
    EXPECT_EQ(lw.router_bias.size(), 8u);
    EXPECT_EQ(lw.expert_gate_bias.size(), 8u * 64u);
    EXPECT_EQ(lw.expert_up_bias.size(), 8u * 64u);
    EXPECT_EQ(lw.expert_down_bias.size(), 8u * 128u);
    EXPECT_EQ(lw.experts.size(), 8u);
  }
}

TEST_F(GptOssTest, WholeChunkedAndTokenByTokenPrefillsGiveTheSameLogitsFlashOrNaive) {
  auto flash = model();
  ModelOptions naive_options;
  naive_options.attention = AttentionKind::kNaive;
  auto naive = model(naive_options);
  ASSERT_TRUE(flash && naive);
  const std::vector<float> whole = logits(*flash, kPromptLength);
  ASSERT_EQ(whole.size(), size_t(kPromptLength) * 512);
  const float scale = max_abs(whole);
  ASSERT_GT(scale, 0.0f);
  for (int32_t chunk : {1, 7, 16}) {
    const std::vector<float> pieces = logits(*flash, chunk);
    EXPECT_LE(max_diff(whole, pieces), 1e-5f * scale) << "chunks of " << chunk;
  }
  EXPECT_LE(max_diff(whole, logits(*naive, kPromptLength)), 1e-4f * scale) << "flash vs naive";
  EXPECT_LE(max_diff(whole, logits(*naive, 5)), 1e-4f * scale) << "flash vs naive in chunks of 5";
}

TEST_F(GptOssTest, QuantizingKeepsBiasesSinksAndTheRouter) {
  const std::string out = path("tiny-gpt-oss-q8_0.gguf");
  auto report = format::quantize_gguf({gguf_path_, out, format::GgmlType::kQ8_0, nullptr});
  ASSERT_TRUE(report.ok()) << report.error();
  auto q = format::GgufFile::open(out);
  ASSERT_TRUE(q.ok()) << q.error();
  for (const char* kept :
       {"blk.0.ffn_gate_exps.bias", "blk.0.ffn_up_exps.bias", "blk.0.ffn_down_exps.bias", "blk.0.ffn_gate_inp.bias",
        "blk.0.ffn_gate_inp.weight", "blk.0.attn_sinks.weight", "blk.0.attn_q.bias", "blk.0.attn_output.bias"})
    EXPECT_EQ(q->find_tensor(kept)->type, format::GgmlType::kF32) << kept;
  for (const char* quantized : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_down_exps.weight", "blk.0.attn_q.weight"})
    EXPECT_EQ(q->find_tensor(quantized)->type, format::GgmlType::kQ8_0) << quantized;
  auto m = create_model(*q, kernels::best_kernels());
  ASSERT_TRUE(m.ok()) << m.error();
  const std::vector<float> f32 = logits(*model(), kPromptLength), q8 = logits(**m, kPromptLength);
  EXPECT_LE(max_diff(f32, q8), 0.05f * max_abs(f32));
}

}  // namespace
}  // namespace pagoda
