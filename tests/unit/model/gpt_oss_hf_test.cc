// gpt-oss from an HF folder (model/arch_gpt_oss.cc's GptOssForCausalLM, hf_checkpoint.cc's MXFP4 repacking) on
// gen-model's tiny-gpt-oss folder (synth/hf_random_model_writer.h):
// - config.json's fields become the same switches the family's GGUF keys give (experts, window pattern, YaRN);
// - the MXFP4 experts, decoded as transformers decodes OpenAI's layout (value 2i in byte i's low nibble, gate and up
//   interleaved by row), equal pagoda's repacked ggml blocks decoded by its own dequantizer, value for value;
// - the GGUF written from the folder (llama.cpp's converter's layout: MXFP4 experts, f32 biases and sinks) gives
//   the same logits as the folder over a prompt past the window and the original context;
// - folders llama.cpp would run differently (no MXFP4, another window pattern or SwiGLU clamp) are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "format/gguf_reader.h"
#include "format/safetensors_reader.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
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

using ::testing::HasSubstr;

constexpr int32_t kGptOssHfBlockSize = 16;
constexpr int32_t kGptOssHfPromptLength = 45;  // past the window (16) and the original context (32)
constexpr int32_t kGptOssHfVocab = 512;

class GptOssHfTest : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-gpt-oss");
    ASSERT_TRUE(shape.has_value());
    folder_ = path("tiny-gpt-oss-hf");
    synth::RandomHfModelOptions o{.shape = *shape, .seed = 11, .output_path = folder_};
    const Status written = synth::write_random_hf_model(o);
    ASSERT_TRUE(written.ok()) << written.message();
    auto ckpt = HfCheckpoint::open(folder_);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    ckpt_ = std::move(*ckpt);
    for (int32_t i = 0; i < kGptOssHfPromptLength; ++i) prompt_.push_back(TokenId((i * 37 + 11) % kGptOssHfVocab));
  }

  // Every prompt row's logits, the prompt fed `chunk` tokens a step.
  std::vector<float> logits(const Model& m, int32_t chunk) const {
    return testing::chunked_prompt_logits(m, prompt_, chunk, {.block_size = kGptOssHfBlockSize});
  }

  std::string folder_;
  std::unique_ptr<HfCheckpoint> ckpt_;
  std::vector<TokenId> prompt_;
};

TEST_F(GptOssHfTest, ConfigFieldsBecomeTheFamilysSwitches) {
  const ModelConfig& c = ckpt_->config();
  EXPECT_EQ(c.architecture, "gpt-oss");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.layer_is_swa, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(c.rope_scaling, RopeScalingType::kYarn);
  EXPECT_EQ(c.rope_original_context, 32);
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 1.0f / 32.0f);
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_used, 4);
  EXPECT_EQ(c.expert_hidden_dim, 64);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_TRUE(c.expert_softmax_after_topk);
  EXPECT_EQ(c.activation, FfnActivation::kSwigluOai);
  EXPECT_TRUE(c.ffn_norm_is_post_attention_norm);
  const TensorRef* gate = ckpt_->tensors().find("blk.1.ffn_gate_exps.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->dtype, DType::kMXFP4);
  EXPECT_EQ(gate->dims, (std::vector<int64_t>{128, 64, 8}));
  const TensorRef* up_bias = ckpt_->tensors().find("blk.1.ffn_up_exps.bias");
  ASSERT_NE(up_bias, nullptr);
  EXPECT_EQ(up_bias->dims, (std::vector<int64_t>{64, 8}));
  auto w = model_weights_from_tensors(ckpt_->tensors(), c);
  ASSERT_TRUE(w.ok()) << w.error();
  for (const LayerWeights& lw : w->layers) {
    EXPECT_EQ(lw.sinks.size(), 8u);
    EXPECT_EQ(lw.bo.size(), 128u);
    EXPECT_EQ(lw.router_bias.size(), 8u);
    EXPECT_EQ(lw.expert_gate_bias.size(), 8u * 64u);
    EXPECT_EQ(lw.expert_down_bias.size(), 8u * 128u);
  }
}

// transformers' convert_moe_packed_tensors: FP4 (e2m1) codes, low nibble first, times 2^(scale - 127).
float openai_mxfp4_value(const uint8_t* blocks, const uint8_t* scales, int64_t row, int64_t col, int64_t cols) {
  static constexpr float kFp4[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const uint8_t byte = blocks[row * (cols / 2) + col / 2];
  const uint8_t code = col % 2 == 0 ? byte & 0x0F : byte >> 4;
  return std::ldexp(kFp4[code], int(scales[row * (cols / 32) + col / 32]) - 127);
}

TEST_F(GptOssHfTest, RepackedExpertsDecodeToTransformersValues) {
  auto st = format::SafetensorsCheckpoint::open_folder(folder_);
  ASSERT_TRUE(st.ok()) << st.error();
  const ModelConfig& c = ckpt_->config();
  const int64_t experts = c.num_experts, hidden = c.expert_hidden_dim, dim = c.dim;
  struct Case {
    const char* hf;
    const char* gguf;
    int64_t rows, cols;
    int parity;  // of the interleaved gate_up rows; -1: down_proj's own rows
  };
  int64_t nonzero = 0;
  for (const Case& k : {Case{"gate_up_proj", "ffn_gate_exps", 2 * hidden, dim, 0},
                        Case{"gate_up_proj", "ffn_up_exps", 2 * hidden, dim, 1},
                        Case{"down_proj", "ffn_down_exps", dim, hidden, -1}}) {
    const std::string prefix = fmt::format("model.layers.1.mlp.experts.{}", k.hf);
    const format::SafetensorsTensor* blocks = st->find(prefix + "_blocks");
    const format::SafetensorsTensor* scales = st->find(prefix + "_scales");
    ASSERT_TRUE(blocks != nullptr && scales != nullptr) << prefix;
    EXPECT_TRUE(blocks->bytes && scales->bytes);
    const TensorRef* t = ckpt_->tensors().find(fmt::format("blk.1.{}.weight", k.gguf));
    ASSERT_NE(t, nullptr) << k.gguf;
    const int64_t out_rows = k.parity < 0 ? k.rows : k.rows / 2, row_bytes = dtype_row_bytes(DType::kMXFP4, k.cols);
    std::vector<float> row(static_cast<size_t>(k.cols));
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t r = 0; r < out_rows; ++r) {
        dequantize_row(DType::kMXFP4, static_cast<const uint8_t*>(t->data) + (e * out_rows + r) * row_bytes,
                       row.data(), k.cols);
        const int64_t hf_row = e * k.rows + (k.parity < 0 ? r : 2 * r + k.parity);
        for (int64_t col = 0; col < k.cols; ++col) {
          const float expected = openai_mxfp4_value(static_cast<const uint8_t*>(blocks->data),
                                                    static_cast<const uint8_t*>(scales->data), hf_row, col, k.cols);
          ASSERT_EQ(row[size_t(col)], expected) << k.gguf << " expert " << e << " row " << r << " col " << col;
          nonzero += expected != 0.0f;
        }
      }
  }
  EXPECT_GT(nonzero, 1000);
}

TEST_F(GptOssHfTest, TheConvertedGgufGivesTheFoldersLogits) {
  const std::string gguf = path("tiny-gpt-oss.gguf");
  format::GgufWriter metadata = hf_gguf_metadata(*ckpt_);
  ASSERT_TRUE(write_hf_gguf(*ckpt_, metadata, gguf).ok());
  auto file = format::GgufFile::open(gguf);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->find_tensor("blk.0.ffn_gate_exps.weight")->type, format::GgmlType::kMXFP4);
  EXPECT_EQ(file->find_tensor("blk.0.ffn_down_exps.weight")->type, format::GgmlType::kMXFP4);
  for (const char* f32 : {"blk.0.ffn_gate_exps.bias", "blk.0.ffn_down_exps.bias", "blk.0.attn_sinks.weight",
                          "blk.0.attn_output.bias", "blk.0.ffn_gate_inp.bias"})
    EXPECT_EQ(file->find_tensor(f32)->type, format::GgmlType::kF32) << f32;
  auto from_gguf = create_model(*file, kernels::best_kernels());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error();
  auto from_folder = create_model(ckpt_->config(), ckpt_->tensors(), kernels::best_kernels());
  ASSERT_TRUE(from_folder.ok()) << from_folder.error();
  for (int32_t chunk : {kGptOssHfPromptLength, 7}) {
    const std::vector<float> a = logits(**from_folder, chunk), b = logits(**from_gguf, chunk);
    ASSERT_EQ(a.size(), size_t(kGptOssHfPromptLength) * kGptOssHfVocab);
    float scale = 0.0f;
    for (float x : a) scale = std::max(scale, std::fabs(x));
    EXPECT_GT(scale, 0.0f);
    EXPECT_EQ(a, b) << "chunks of " << chunk;
  }
}

std::string gpt_oss_config(const std::string& extra) {
  return R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 64, "intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 300,
    "num_local_experts": 4, "experts_per_token": 2, "sliding_window": 8)" +
         extra + "}";
}

TEST(GptOssHfConfigTest, RefusesWhatLlamaCppWouldRunDifferently) {
  const std::string mxfp4 = R"(, "quantization_config": {"quant_method": "mxfp4"})";
  EXPECT_TRUE(parse_hf_config(gpt_oss_config(mxfp4), "config.json").ok());
  auto dequantized = parse_hf_config(gpt_oss_config(""), "config.json");
  ASSERT_FALSE(dequantized.ok());
  EXPECT_THAT(dequantized.error(), HasSubstr("MXFP4"));
  auto other = parse_hf_config(gpt_oss_config(R"(, "quantization_config": {"quant_method": "fp8"})"), "config.json");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.error(), HasSubstr("quant_method \"fp8\""));
  auto layers = parse_hf_config(
      gpt_oss_config(mxfp4 + R"(, "layer_types": ["full_attention", "sliding_attention"])"), "config.json");
  ASSERT_FALSE(layers.ok());
  EXPECT_THAT(layers.error(), HasSubstr("layer_types"));
  auto clamp = parse_hf_config(gpt_oss_config(mxfp4 + R"(, "swiglu_limit": 10.0)"), "config.json");
  ASSERT_FALSE(clamp.ok());
  EXPECT_THAT(clamp.error(), HasSubstr("swiglu_limit"));
}

}  // namespace
}  // namespace pagoda
