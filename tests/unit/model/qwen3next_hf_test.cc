// Qwen3-Next from an HF folder (model/arch_qwen3next.cc's Qwen3NextForCausalLM, hf_checkpoint.cc's in_proj_qkvz
// split) on gen-model's tiny-qwen3next folder (synth/hf_random_model_writer.h):
// - config.json's fields become the switches the family's GGUF keys give (DeltaNet heads grouped by key head, layer
//   pattern, partial rotation, experts and the gated shared expert);
// - the tensors are llama.cpp's converter's: in_proj_qkvz (per key head q, k, v, z) regrouped into attn_qkv (every q,
//   every k, every v) and attn_gate (every z), in_proj_ba kept as ssm_ba, A_log as -exp, every norm but the DeltaNet
//   output norm as 1 + w;
// - the GGUF written from the folder gives the folder's logits, whole and chunked;
// - decoder_sparse_step other than 1 and dense mlp_only_layers are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf_reader.h"
#include "format/safetensors_reader.h"
#include "kernels/kernels.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/hf_gguf.h"
#include "model/registry.h"
#include "support/chunked_prompt_logits.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"
#include "synth/model_shapes.h"

namespace pagoda {
namespace {

constexpr int32_t kQwen3NextHfPromptLength = 37;
constexpr int32_t kQwen3NextHfVocab = 512;

class Qwen3NextHfTest : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen3next");
    ASSERT_TRUE(shape.has_value());
    shape_ = *shape;
    dir_ = path("folder");
    const Status written = synth::write_random_hf_model({.shape = shape_, .seed = 5, .output_path = dir_});
    ASSERT_TRUE(written.ok()) << written.message();
    auto ckpt = HfCheckpoint::open(dir_);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    ckpt_ = std::move(*ckpt);
  }

  static std::vector<float> logits(const Model& m, int32_t chunk) {
    std::vector<TokenId> prompt;
    for (int32_t i = 0; i < kQwen3NextHfPromptLength; ++i) prompt.push_back(TokenId((i * 37 + 11) % kQwen3NextHfVocab));
    return testing::chunked_prompt_logits(m, prompt, chunk);
  }

  synth::ModelShape shape_;
  std::string dir_;
  std::unique_ptr<HfCheckpoint> ckpt_;
};

TEST_F(Qwen3NextHfTest, ConfigFieldsBecomeTheFamilysSwitches) {
  const ModelConfig& c = ckpt_->config();
  EXPECT_EQ(c.architecture, "qwen3next");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_TRUE(c.delta_net_grouped_v_heads);
  EXPECT_TRUE(c.attn_output_gate);
  EXPECT_TRUE(c.ffn_norm_is_post_attention_norm);
  EXPECT_EQ(c.layer_is_conv, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c.delta_net_k_heads, 2);
  EXPECT_EQ(c.delta_net_v_heads, 4);
  EXPECT_EQ(c.delta_net_head_dim, 32);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_used, 2);
  EXPECT_EQ(c.expert_hidden_dim, 64);
  EXPECT_EQ(c.shared_expert_hidden_dim, 96);
  EXPECT_TRUE(c.shared_expert_gated);
  EXPECT_TRUE(c.expert_weights_norm);
}

TEST_F(Qwen3NextHfTest, TheFusedProjectionsAreSplitAsLlamaCppsConverterSplitsThem) {
  auto st = format::SafetensorsCheckpoint::open_folder(dir_);
  ASSERT_TRUE(st.ok()) << st.error();
  const ModelConfig& c = ckpt_->config();
  const int64_t k_heads = c.delta_net_k_heads, v_heads = c.delta_net_v_heads, hd = c.delta_net_head_dim;
  const int64_t per_k = v_heads / k_heads, dim = c.dim, group = 2 * hd + 2 * per_k * hd;
  const auto hf = [&](const std::string& name) {
    const format::SafetensorsTensor* t = st->find("model.layers.0.linear_attn." + name);
    EXPECT_NE(t, nullptr) << name;
    return t == nullptr ? nullptr : static_cast<const float*>(t->data);
  };
  const auto gguf = [&](const std::string& name) {
    const TensorRef* t = ckpt_->tensors().find("blk.0." + name);
    EXPECT_NE(t, nullptr) << name;
    return t == nullptr ? nullptr : static_cast<const float*>(t->data);
  };
  const float* qkvz = hf("in_proj_qkvz.weight");
  const float* qkv = gguf("attn_qkv.weight");
  const float* z = gguf("attn_gate.weight");
  ASSERT_TRUE(qkvz && qkv && z);
  EXPECT_EQ(ckpt_->tensors().find("blk.0.attn_qkv.weight")->dims,
            (std::vector<int64_t>{dim, 2 * k_heads * hd + v_heads * hd}));
  EXPECT_EQ(ckpt_->tensors().find("blk.0.attn_gate.weight")->dims, (std::vector<int64_t>{dim, v_heads * hd}));
  const auto same_row = [&](const float* a, int64_t ra, int64_t rb) {
    return std::memcmp(a + ra * dim, qkvz + rb * dim, size_t(dim) * 4) == 0;
  };
  for (int64_t g = 0; g < k_heads; ++g) {
    for (int64_t i = 0; i < hd; ++i) {
      EXPECT_TRUE(same_row(qkv, g * hd + i, g * group + i)) << "q of key head " << g;
      EXPECT_TRUE(same_row(qkv, k_heads * hd + g * hd + i, g * group + hd + i)) << "k of key head " << g;
    }
    for (int64_t i = 0; i < per_k * hd; ++i) {
      EXPECT_TRUE(same_row(qkv, 2 * k_heads * hd + g * per_k * hd + i, g * group + 2 * hd + i)) << "v of " << g;
      EXPECT_TRUE(same_row(z, g * per_k * hd + i, g * group + 2 * hd + per_k * hd + i)) << "z of " << g;
    }
  }
  const float* ba = gguf("ssm_ba.weight");
  const float* hf_ba = hf("in_proj_ba.weight");
  ASSERT_TRUE(ba && hf_ba);
  EXPECT_EQ(std::memcmp(ba, hf_ba, size_t(2 * v_heads * dim) * 4), 0) << "ssm_ba is in_proj_ba as it is";
  const float* a = gguf("ssm_a");
  const float* a_log = hf("A_log");
  ASSERT_TRUE(a && a_log);
  for (int64_t h = 0; h < v_heads; ++h) EXPECT_EQ(a[h], -std::exp(a_log[h])) << "head " << h;
  const float* ssm_norm = gguf("ssm_norm.weight");
  const float* hf_norm = hf("norm.weight");
  ASSERT_TRUE(ssm_norm && hf_norm);
  for (int64_t i = 0; i < hd; ++i) EXPECT_EQ(ssm_norm[i], hf_norm[i]) << "the DeltaNet output norm is w";
  const float* attn_norm = gguf("attn_norm.weight");
  const format::SafetensorsTensor* hf_attn_norm = st->find("model.layers.0.input_layernorm.weight");
  ASSERT_TRUE(attn_norm && hf_attn_norm);
  for (int64_t i = 0; i < dim; ++i)
    EXPECT_EQ(attn_norm[i], 1.0f + static_cast<const float*>(hf_attn_norm->data)[i]) << "the other norms are 1 + w";
}

TEST_F(Qwen3NextHfTest, TheConvertedGgufGivesTheFoldersLogits) {
  format::GgufWriter metadata = hf_gguf_metadata(*ckpt_);
  ASSERT_TRUE(write_hf_gguf(*ckpt_, metadata, path("converted.gguf")).ok());
  auto file = format::GgufFile::open(path("converted.gguf"));
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->find_tensor("blk.0.ssm_beta.weight"), nullptr);
  EXPECT_NE(file->find_tensor("blk.0.ssm_ba.weight"), nullptr);
  auto from_gguf = create_model(*file, kernels::best_kernels());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error();
  auto from_folder = create_model(ckpt_->config(), ckpt_->tensors(), kernels::best_kernels());
  ASSERT_TRUE(from_folder.ok()) << from_folder.error();
  for (int32_t chunk : {kQwen3NextHfPromptLength, 5}) {
    const std::vector<float> a = logits(**from_folder, chunk), b = logits(**from_gguf, chunk);
    ASSERT_EQ(a.size(), size_t(kQwen3NextHfPromptLength) * kQwen3NextHfVocab);
    float scale = 0.0f;
    for (float x : a) scale = std::max(scale, std::fabs(x));
    EXPECT_GT(scale, 0.0f);
    EXPECT_EQ(a, b) << "chunks of " << chunk;
  }
}

TEST_F(Qwen3NextHfTest, DenseLayersAreRefusedByName) {
  std::ifstream in(dir_ + "/config.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string config = text.str();
  for (const auto& [field, value, message] :
       {std::tuple{"decoder_sparse_step", "2", "decoder_sparse_step 2 is not supported"},
        std::tuple{"mlp_only_layers", "[1]", "mlp_only_layers is not supported"}}) {
    nlohmann::json j = nlohmann::json::parse(config);
    j[field] = nlohmann::json::parse(value);
    auto parsed = parse_hf_config(j.dump(), "config.json");
    ASSERT_FALSE(parsed.ok()) << field;
    EXPECT_NE(parsed.error().find(message), std::string::npos) << parsed.error();
  }
}

}  // namespace
}  // namespace pagoda
