// Qwen3.5 from an HF folder (model/arch_qwen35.cc's Qwen3_5ForCausalLM and Qwen3_5MoeForCausalLM, hf_checkpoint.cc's
// value-head tiling) on gen-model's tiny-qwen35 and tiny-qwen35moe folders (synth/hf_random_model_writer.h):
// - config.json's fields become the switches the family's GGUF keys give (DeltaNet heads, layer pattern, partial
//   rotation, experts and the gated shared expert);
// - the tensors are llama.cpp's converter's: value heads moved from grouped by key head to tiled order (checked here
//   by the converter's index rule, head r * K + g from the folder's g * R + r) in in_proj_qkv's V rows, conv1d's V
//   channels, A_log (as -exp) and out_proj's columns, every norm but the DeltaNet output norm as 1 + w;
// - the GGUF written from the folder gives the folder's logits, dense and MoE;
// - the layout Qwen publishes (Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration: text_config
//   nested beside a vision_config, the text weights under model.language_model., the vision tower's under
//   model.visual.), made here from gen-model's folder, loads as the same text model, the tower left out and said so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <vector>

#include "format/gguf_reader.h"
#include "format/safetensors_reader.h"
#include "format/safetensors_writer.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "kv/state_storage.h"
#include "model/hf_checkpoint.h"
#include "model/hf_gguf.h"
#include "model/llama_model.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"
#include "synth/model_shapes.h"
#include "support/chunked_prompt_logits.h"

namespace pagoda {
namespace {

constexpr int32_t kQwen35HfBlockSize = 16;
constexpr int32_t kQwen35HfPromptLength = 37;
constexpr int32_t kQwen35HfVocab = 512;

class Qwen35HfTest : public testing_support::TempDirTest {
 protected:
  std::unique_ptr<HfCheckpoint> folder(const std::string& shape_name, const std::string& dir) {
    std::optional<synth::ModelShape> shape = synth::find_model_shape(shape_name);
    EXPECT_TRUE(shape.has_value());
    if (!shape) return nullptr;
    const Status written = synth::write_random_hf_model({.shape = *shape, .seed = 5, .output_path = dir});
    EXPECT_TRUE(written.ok()) << written.message();
    auto ckpt = HfCheckpoint::open(dir);
    EXPECT_TRUE(ckpt.ok()) << ckpt.error();
    return ckpt.ok() ? std::move(*ckpt) : nullptr;
  }

  // Every prompt row's logits, the prompt fed `chunk` tokens a step into one sequence.
  static std::vector<float> logits(const Model& m, int32_t chunk) {
    std::vector<TokenId> prompt;
    for (int32_t i = 0; i < kQwen35HfPromptLength; ++i) prompt.push_back(TokenId((i * 37 + 11) % kQwen35HfVocab));
    return testing::chunked_prompt_logits(m, prompt, chunk, {.block_size = kQwen35HfBlockSize});
  }

  void expect_gguf_gives_the_folders_logits(const HfCheckpoint& ckpt, const std::string& gguf) {
    format::GgufWriter metadata = hf_gguf_metadata(ckpt);
    ASSERT_TRUE(write_hf_gguf(ckpt, metadata, gguf).ok());
    auto file = format::GgufFile::open(gguf);
    ASSERT_TRUE(file.ok()) << file.error();
    auto from_gguf = create_model(*file, kernels::best_kernels());
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.error();
    auto from_folder = create_model(ckpt.config(), ckpt.tensors(), kernels::best_kernels());
    ASSERT_TRUE(from_folder.ok()) << from_folder.error();
    for (int32_t chunk : {kQwen35HfPromptLength, 5}) {
      const std::vector<float> a = logits(**from_folder, chunk), b = logits(**from_gguf, chunk);
      ASSERT_EQ(a.size(), size_t(kQwen35HfPromptLength) * kQwen35HfVocab);
      float scale = 0.0f;
      for (float x : a) scale = std::max(scale, std::fabs(x));
      EXPECT_GT(scale, 0.0f);
      EXPECT_EQ(a, b) << "chunks of " << chunk;
    }
  }
};

TEST_F(Qwen35HfTest, ConfigFieldsBecomeTheFamilysSwitches) {
  auto ckpt = folder("tiny-qwen35", path("dense"));
  ASSERT_TRUE(ckpt);
  const ModelConfig& c = ckpt->config();
  EXPECT_EQ(c.architecture, "qwen35");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_TRUE(c.attn_output_gate);
  EXPECT_TRUE(c.ffn_norm_is_post_attention_norm);
  EXPECT_EQ(c.layer_is_conv, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c.delta_net_k_heads, 2);
  EXPECT_EQ(c.delta_net_v_heads, 4);
  EXPECT_EQ(c.delta_net_head_dim, 32);
  EXPECT_EQ(c.delta_net_conv_kernel, 4);
  EXPECT_EQ(c.rope_dim, 8);
  auto moe = folder("tiny-qwen35moe", path("moe"));
  ASSERT_TRUE(moe);
  EXPECT_EQ(moe->config().architecture, "qwen35moe");
  EXPECT_EQ(moe->config().num_experts, 8);
  EXPECT_EQ(moe->config().num_experts_used, 2);
  EXPECT_EQ(moe->config().expert_hidden_dim, 64);
  EXPECT_EQ(moe->config().shared_expert_hidden_dim, 96);
  EXPECT_TRUE(moe->config().shared_expert_gated);
  EXPECT_TRUE(moe->config().expert_weights_norm);
}

TEST_F(Qwen35HfTest, ValueHeadsAreTiledAsLlamaCppsConverterTilesThem) {
  const std::string dir = path("dense");
  auto ckpt = folder("tiny-qwen35", dir);
  ASSERT_TRUE(ckpt);
  auto st = format::SafetensorsCheckpoint::open_folder(dir);
  ASSERT_TRUE(st.ok()) << st.error();
  const ModelConfig& c = ckpt->config();
  const int64_t k_heads = c.delta_net_k_heads, v_heads = c.delta_net_v_heads, hd = c.delta_net_head_dim;
  const int64_t qk = 2 * k_heads * hd, dim = c.dim, taps = c.delta_net_conv_kernel;
  // The converter's _reorder_v_heads: reshape [K, R, ...], swap the two, flatten: tiled head n = r * K + g holds the
  // folder's head g * R + r.
  const auto folder_head = [&](int64_t n) { return (n % k_heads) * (v_heads / k_heads) + n / k_heads; };
  const auto hf = [&](const std::string& name) {
    const format::SafetensorsTensor* t = st->find("model.layers.0.linear_attn." + name);
    EXPECT_NE(t, nullptr) << name;
    return static_cast<const float*>(t->data);
  };
  const auto gguf = [&](const std::string& name) {
    const TensorRef* t = ckpt->tensors().find("blk.0." + name);
    EXPECT_NE(t, nullptr) << name;
    EXPECT_EQ(*t->dtype, DType::kF32) << name;
    return static_cast<const float*>(t->data);
  };
  const float* qkv = gguf("attn_qkv.weight");
  const float* hf_qkv = hf("in_proj_qkv.weight");
  EXPECT_EQ(std::memcmp(qkv, hf_qkv, size_t(qk * dim) * 4), 0) << "Q and K rows stay";
  const float* conv = gguf("ssm_conv1d.weight");
  const float* hf_conv = hf("conv1d.weight");
  const float* a = gguf("ssm_a");
  const float* hf_a_log = hf("A_log");
  const float* out = gguf("ssm_out.weight");
  const float* hf_out = hf("out_proj.weight");
  const int64_t value_dim = v_heads * hd;
  for (int64_t n = 0; n < v_heads; ++n) {
    const int64_t old = folder_head(n);
    EXPECT_EQ(a[n], -std::exp(hf_a_log[old])) << "head " << n;
    for (int64_t i = 0; i < hd; ++i) {
      EXPECT_EQ(std::memcmp(qkv + (qk + n * hd + i) * dim, hf_qkv + (qk + old * hd + i) * dim, size_t(dim) * 4), 0);
      EXPECT_EQ(std::memcmp(conv + (qk + n * hd + i) * taps, hf_conv + (qk + old * hd + i) * taps, size_t(taps) * 4),
                0);
      for (int64_t row = 0; row < dim; ++row)
        ASSERT_EQ(out[row * value_dim + n * hd + i], hf_out[row * value_dim + old * hd + i]);
    }
  }
  const float* ssm_norm = gguf("ssm_norm.weight");
  const float* hf_norm = hf("norm.weight");
  const float* attn_norm = gguf("attn_norm.weight");
  const format::SafetensorsTensor* hf_attn_norm = st->find("model.layers.0.input_layernorm.weight");
  ASSERT_NE(hf_attn_norm, nullptr);
  for (int64_t i = 0; i < hd; ++i) EXPECT_EQ(ssm_norm[i], hf_norm[i]) << "the DeltaNet output norm is w";
  for (int64_t i = 0; i < dim; ++i)
    EXPECT_EQ(attn_norm[i], 1.0f + static_cast<const float*>(hf_attn_norm->data)[i]) << "the other norms are 1 + w";
}

TEST_F(Qwen35HfTest, TheConvertedGgufGivesTheFoldersLogits) {
  auto dense = folder("tiny-qwen35", path("dense"));
  ASSERT_TRUE(dense);
  expect_gguf_gives_the_folders_logits(*dense, path("dense.gguf"));
  auto moe = folder("tiny-qwen35moe", path("moe"));
  ASSERT_TRUE(moe);
  expect_gguf_gives_the_folders_logits(*moe, path("moe.gguf"));
}

// gen-model's folder `from` rewritten at `to` as Qwen publishes Qwen3.5: architectures[0] the multimodal one,
// the text fields in text_config (tie_word_embeddings on top too), a vision_config, every "model." tensor under
// "model.language_model." (lm_head on top), and a vision tower's tensor.
void write_multimodal_layout(const std::string& from, const std::string& to, const std::string& architecture) {
  std::ifstream in(from + "/config.json");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json causal = nlohmann::ordered_json::parse(text.str());
  nlohmann::ordered_json mm;
  mm["architectures"] = {architecture};
  mm["model_type"] = "qwen3_5";
  mm["tie_word_embeddings"] = causal["tie_word_embeddings"];
  causal.erase("architectures");
  mm["text_config"] = causal;
  mm["vision_config"] = {{"depth", 2}, {"hidden_size", 64}, {"out_hidden_size", causal["hidden_size"]}};
  std::filesystem::create_directories(to);
  std::ofstream(to + "/config.json") << mm.dump(2);
  auto st = format::SafetensorsFile::open(from + "/model.safetensors");
  ASSERT_TRUE(st.ok()) << st.error();
  format::SafetensorsWriter w;
  for (const format::SafetensorsTensor& t : (*st)->tensors()) {
    const std::string name = t.name.starts_with("model.") ? "model.language_model." + t.name.substr(6) : t.name;
    const format::SafetensorsTensor* src = &t;
    w.add_tensor(name, t.dtype, t.shape,
                 [src](std::span<uint8_t> dst) { std::memcpy(dst.data(), src->data, dst.size()); });
  }
  w.add_tensor("model.visual.patch_embed.proj.weight", DType::kF32, {64, 3, 2, 16, 16},
               [](std::span<uint8_t> dst) { std::memset(dst.data(), 0, dst.size()); });
  ASSERT_TRUE(w.write(to + "/model.safetensors").ok());
}

TEST_F(Qwen35HfTest, PublishedMultimodalLayoutLoadsAsTheSameTextModel) {
  for (const auto& [shape, architecture] : {std::pair{"tiny-qwen35", "Qwen3_5ForConditionalGeneration"},
                                            std::pair{"tiny-qwen35moe", "Qwen3_5MoeForConditionalGeneration"}}) {
    auto causal = folder(shape, path(std::string(shape) + "-causal"));
    ASSERT_TRUE(causal);
    const std::string mm_dir = path(std::string(shape) + "-multimodal");
    write_multimodal_layout(path(std::string(shape) + "-causal"), mm_dir, architecture);
    auto mm = HfCheckpoint::open(mm_dir);
    ASSERT_TRUE(mm.ok()) << mm.error();
    const HfCheckpoint& m = **mm;
    EXPECT_EQ(m.hf_config().multimodal_architecture, architecture);
    EXPECT_EQ(m.hf_config().hf_architecture, causal->hf_config().hf_architecture);
    EXPECT_THAT(m.note(), ::testing::HasSubstr("vision tower"));
    EXPECT_TRUE(causal->note().empty());
    EXPECT_EQ(m.config().architecture, causal->config().architecture);
    EXPECT_EQ(m.config().num_layers, causal->config().num_layers);
    EXPECT_EQ(m.config().layer_is_conv, causal->config().layer_is_conv);
    EXPECT_EQ(m.config().num_experts, causal->config().num_experts);
    EXPECT_EQ(m.config().rope_dim, causal->config().rope_dim);
    // The same tensors, byte for byte, in the same order.
    ASSERT_EQ(m.tensor_order(), causal->tensor_order());
    for (const std::string& name : m.tensor_order()) {
      const TensorRef *a = m.tensors().find(name), *b = causal->tensors().find(name);
      ASSERT_TRUE(a != nullptr && b != nullptr) << name;
      EXPECT_EQ(a->dims, b->dims) << name;
      int64_t n = 1;
      for (int64_t d : a->dims) n *= d;
      const size_t bytes = size_t(dtype_row_bytes(*a->dtype, a->dims[0]) * (n / a->dims[0]));
      ASSERT_EQ(a->slices.size(), b->slices.size()) << name;
      if (a->slices.empty()) {
        EXPECT_EQ(std::memcmp(a->data, b->data, bytes), 0) << name;
      } else {
        for (size_t e = 0; e < a->slices.size(); ++e)
          EXPECT_EQ(std::memcmp(a->slices[e], b->slices[e], bytes / a->slices.size()), 0) << name << " expert " << e;
      }
    }
  }
  // A multimodal architecture without its text_config is refused by name.
  std::filesystem::create_directories(path("bare"));
  std::ofstream(path("bare") + "/config.json") << R"({"architectures": ["Qwen3_5ForConditionalGeneration"]})";
  auto bare = read_hf_config(path("bare"));
  ASSERT_FALSE(bare.ok());
  EXPECT_THAT(bare.error(), ::testing::HasSubstr("text_config"));
}

}  // namespace
}  // namespace pagoda
