// HF model folders: config.json parsing for each supported architecture (and its errors), HfCheckpoint's
// tensor mapping (names, shapes, Llama's Q/K row permutation, errors naming file and field), and the forward
// pass of the variants: permuted rows with adjacent-pair RoPE equal un-permuted rows with NeoX RoPE, a folder
// and its converted GGUF give bit-identical logits, and fusion on/off agree for QKV bias and Q/K norm.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>

#include "format/safetensors_writer.h"
#include "kv/kv_storage.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/hf_gguf.h"
#include "model/registry.h"
#include "support/temp_dir_test.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string llama_config(const std::string& extra = "") {
  return R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0)" +
         extra + "}";
}

TEST(HfConfigTest, LlamaWithLlama3RopeScaling) {
  auto h = parse_hf_config(llama_config(R"(, "tie_word_embeddings": true, "rope_scaling": {"rope_type": "llama3",
      "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
      "bos_token_id": 7, "eos_token_id": [8, 9])"),
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_TRUE(h->permute_qk);
  EXPECT_FALSE(c.rope_neox);
  EXPECT_TRUE(h->tie_word_embeddings);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.context_length, 256);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(h->bos_token_id, 7);
  EXPECT_EQ(h->eos_token_id, 8);
  // HF's _compute_llama3_parameters, pair by pair: wavelengths under 8192/4 keep their frequency, over 8192 are
  // divided by the factor, and in between are interpolated.
  ASSERT_EQ(c.rope_freq_factors.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const double inv_freq = 1.0 / std::pow(500000.0, 2.0 * i / 16.0);
    const double wavelen = 2 * std::numbers::pi / inv_freq;
    double scaled = inv_freq;
    if (wavelen > 8192.0) {
      scaled = inv_freq / 32.0;
    } else if (wavelen >= 2048.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
      scaled = (1 - smooth) * inv_freq / 32.0 + smooth * inv_freq;
    }
    EXPECT_NEAR(inv_freq / c.rope_freq_factors[size_t(i)], scaled, 1e-6 * inv_freq) << i;
  }
  EXPECT_FLOAT_EQ(c.rope_freq_factors[0], 1.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_factors[7], 32.0f);
}

TEST(HfConfigTest, MistralSlidingWindowIsEveryLayersWindow) {
  auto h = parse_hf_config(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300,
      "max_position_embeddings": 32768, "sliding_window": 4096})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->config.architecture, "llama");
  EXPECT_TRUE(h->permute_qk);
  EXPECT_EQ(h->config.sliding_window, 4096);
  EXPECT_TRUE(h->config.is_swa_layer(0));
  EXPECT_EQ(h->config.context_length, 32768);  // windowed attention keeps longer contexts exact
  EXPECT_TRUE(h->config.rope_freq_factors.empty());
}

TEST(HfConfigTest, Qwen2HasBiasAndNeoxRope) {
  auto h = parse_hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
      "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
      "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "sliding_window": 32768,
      "use_sliding_window": false, "tie_word_embeddings": true})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->config.architecture, "qwen2");
  EXPECT_TRUE(h->qkv_bias);
  EXPECT_FALSE(h->qk_norm);
  EXPECT_FALSE(h->permute_qk);
  EXPECT_TRUE(h->config.rope_neox);
  EXPECT_EQ(h->config.head_dim, 64);
  EXPECT_EQ(h->config.sliding_window, 0);
  EXPECT_EQ(h->config.context_length, 32768);
}

TEST(HfConfigTest, Qwen3HeadDimDiffersFromHiddenOverHeads) {
  auto h = parse_hf_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
      "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
      "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000, "rms_norm_eps": 1e-06,
      "attention_bias": false, "rope_scaling": null, "tie_word_embeddings": true})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->config.architecture, "qwen3");
  EXPECT_TRUE(h->qk_norm);
  EXPECT_FALSE(h->qkv_bias);
  EXPECT_EQ(h->config.head_dim, 128);
  EXPECT_EQ(h->config.q_dim(), 2048);
  EXPECT_EQ(h->config.kv_dim(), 1024);
  // What gen-model writes reads back to the same config.
  auto again = parse_hf_config(hf_config_json(*h), "again.json");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->config.q_dim(), 2048);
  EXPECT_EQ(again->config.rope_theta, h->config.rope_theta);
  EXPECT_EQ(again->tie_word_embeddings, true);
}

TEST(HfConfigTest, BadConfigsNameTheFileAndField) {
  struct Case {
    std::string json, message;
  };
  const std::vector<Case> cases = {
      {"[]", "cfg.json: not a JSON object"},
      {R"({"hidden_size": 64})", "cfg.json: missing field architectures"},
      {R"({"architectures": ["GPT2LMHeadModel"]})",
       "cfg.json: architectures[0] = \"GPT2LMHeadModel\" is not supported"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})", "cfg.json: missing field intermediate_size"},
      {llama_config(R"(, "num_key_value_heads": 3)"),
       "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
      {llama_config(R"(, "hidden_size": -64)"), "cfg.json: hidden_size must be an integer in 1..1048576, got -64"},
      {llama_config(R"(, "rope_theta": "big")"), "cfg.json: rope_theta must be a positive number"},
      // Absurd sizes stop here, before anything is sized by them (issue 23, item 3).
      {llama_config(R"(, "num_hidden_layers": 2147483647)"),
       "cfg.json: num_hidden_layers must be an integer in 1..65536, got 2147483647"},
      {llama_config(R"(, "num_attention_heads": 1073741824)"), "num_attention_heads must be an integer in 1..16384"},
      {llama_config(R"(, "vocab_size": 18446744073709551615)"), "vocab_size must be an integer in 1..8388608"},
      {llama_config(R"(, "max_position_embeddings": 4294967296)"), "max_position_embeddings must be an integer in"},
      {llama_config(R"(, "num_key_value_heads": 8)"), "num_key_value_heads must be an integer in 1..4"},
      {llama_config(R"(, "head_dim": 0)"), "head_dim must be an integer in 1.."},
      {llama_config(R"(, "rms_norm_eps": 1e300)"), "rms_norm_eps must be a positive number (at most"},
      {llama_config(R"(, "rope_scaling": {"rope_type": "llama3", "original_max_position_embeddings": 1e12})"),
       "rope_scaling.original_max_position_embeddings must be a positive number (at most 16777216)"},
      // Wrong JSON types are errors naming the field, never exceptions (issue 23, item 2).
      {llama_config(R"(, "bos_token_id": "1")"), "cfg.json: bos_token_id must be a token id"},
      {llama_config(R"(, "eos_token_id": [{"id": 2}])"), "cfg.json: eos_token_id must be a token id"},
      {llama_config(R"(, "eos_token_id": -5)"), "cfg.json: eos_token_id must be a token id"},
      {llama_config(R"(, "rope_scaling": {"rope_type": 3})"), "rope_scaling needs a string rope_type"},
      {llama_config(R"(, "num_hidden_layers": 2.5)"), "num_hidden_layers must be an integer"},
      {llama_config(R"(, "num_hidden_layers": [2])"), "num_hidden_layers must be an integer in 1..65536, got [2]"},
      {std::string(100000, '[') + std::string(100000, ']'), "cfg.json: JSON nested deeper than 64 levels"},
      {"{\"architectures\": [", "cfg.json: invalid JSON"},
      {llama_config(R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 4})"),
       "cfg.json: rope_scaling type \"dynamic\" is not supported"},
      {llama_config(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4, "beta_slow": 0})"),
       "cfg.json: rope_scaling.beta_slow must be a positive number"},
      {llama_config(R"(, "tie_word_embeddings": 1)"), "cfg.json: tie_word_embeddings must be true or false"},
  };
  for (const Case& c : cases) {
    auto h = parse_hf_config(c.json, "cfg.json");
    ASSERT_FALSE(h.ok()) << c.message;
    EXPECT_THAT(h.error(), HasSubstr(c.message));
  }
}

// A tiny random HF folder of one architecture, written tensor by tensor with the safetensors writer.
class HfFolderTest : public testing_support::TempDirTest {
 protected:
  // Writes config.json and model.safetensors; `reshape` may change one tensor's shape (bad-input tests).
  void write_folder(const std::string& arch, bool tied,
                    const std::function<void(std::string&, std::vector<int64_t>&)>& reshape = {}) {
    const bool qwen3 = arch == "Qwen3ForCausalLM", qwen2 = arch == "Qwen2ForCausalLM";
    const int64_t dim = 64, heads = 4, kv_heads = 2, hd = qwen3 ? 32 : 16, hidden = 96, vocab = 300;
    std::ofstream(dir_ / "config.json") << fmt::format(
        R"({{"architectures": ["{}"], "hidden_size": {}, "intermediate_size": {}, "num_hidden_layers": 2,
        "num_attention_heads": {}, "num_key_value_heads": {}, "head_dim": {}, "vocab_size": {},
        "max_position_embeddings": 64, "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": {}}})",
        arch, dim, hidden, heads, kv_heads, hd, vocab, tied ? "true" : "false");
    format::SafetensorsWriter w;
    int seed = 0;
    auto add = [&](std::string name, std::vector<int64_t> shape, bool norm) {
      if (reshape) reshape(name, shape);
      const int s = ++seed;
      w.add_tensor(name, DType::kF32, shape, [s, norm](std::span<uint8_t> dst) {
        std::mt19937 rng{uint32_t(s)};
        std::uniform_real_distribution<float> u(-0.15f, 0.15f);
        for (size_t i = 0; i < dst.size() / 4; ++i) {
          const float v = norm ? 1.0f + u(rng) : u(rng);
          std::memcpy(dst.data() + 4 * i, &v, 4);
        }
      });
    };
    add("model.embed_tokens.weight", {vocab, dim}, false);
    for (int l = 0; l < 2; ++l) {
      const std::string p = fmt::format("model.layers.{}.", l);
      add(p + "input_layernorm.weight", {dim}, true);
      add(p + "self_attn.q_proj.weight", {heads * hd, dim}, false);
      add(p + "self_attn.k_proj.weight", {kv_heads * hd, dim}, false);
      add(p + "self_attn.v_proj.weight", {kv_heads * hd, dim}, false);
      if (qwen2) {
        add(p + "self_attn.q_proj.bias", {heads * hd}, false);
        add(p + "self_attn.k_proj.bias", {kv_heads * hd}, false);
        add(p + "self_attn.v_proj.bias", {kv_heads * hd}, false);
      }
      if (qwen3) {
        add(p + "self_attn.q_norm.weight", {hd}, true);
        add(p + "self_attn.k_norm.weight", {hd}, true);
      }
      add(p + "self_attn.o_proj.weight", {dim, heads * hd}, false);
      add(p + "post_attention_layernorm.weight", {dim}, true);
      add(p + "mlp.gate_proj.weight", {hidden, dim}, false);
      add(p + "mlp.up_proj.weight", {hidden, dim}, false);
      add(p + "mlp.down_proj.weight", {dim, hidden}, false);
    }
    add("model.norm.weight", {dim}, true);
    if (!tied) add("lm_head.weight", {vocab, dim}, false);
    ASSERT_TRUE(w.write((dir_ / "model.safetensors").string()).ok());
  }

  // Logits of the last of 7 prompt tokens, then of one decode step after it.
  static std::vector<float> logits(const Model& m) {
    std::vector<float> out;
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), 2, 8);
    Workspace ws(m.config(), 8, 16, 1, 2);
    const BlockId table[] = {0, 1};
    {
      const TokenId tokens[] = {1, 17, 250, 3, 99, 42, 299};
      const Pos positions[] = {0, 1, 2, 3, 4, 5, 6};
      const int32_t slots[] = {0, 1, 2, 3, 4, 5, 6}, seq_starts[] = {0, 7}, context_lens[] = {7}, rows[] = {6};
      BatchView batch{tokens, positions, slots, seq_starts, context_lens, BlockTableView{table, 1, 2}, rows, {}};
      LogitsView l = m.forward(batch, kv.view(), ws, pool);
      out.assign(l.row(0).begin(), l.row(0).end());
    }
    const TokenId tokens[] = {5};
    const Pos positions[] = {7};
    const int32_t slots[] = {7}, seq_starts[] = {0, 1}, context_lens[] = {8}, rows[] = {0};
    BatchView batch{tokens, positions, slots, seq_starts, context_lens, BlockTableView{table, 1, 2}, rows, {}};
    LogitsView l = m.forward(batch, kv.view(), ws, pool);
    out.insert(out.end(), l.row(0).begin(), l.row(0).end());
    return out;
  }
};

TEST_F(HfFolderTest, LlamaTensorsGetGgufNamesAndPermutedQkRows) {
  write_folder("LlamaForCausalLM", /*tied=*/false);
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.error();
  const TensorSet& t = (*ckpt)->tensors();
  const TensorRef* q = t.find("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{64, 64}));
  ASSERT_NE(t.find("output.weight"), nullptr);
  EXPECT_EQ(t.find("blk.0.attn_q_norm.weight"), nullptr);
  // Row 2i of each head is the HF row i, row 2i+1 the HF row head_dim/2 + i (llama.cpp's permute).
  auto st = format::SafetensorsFile::open((dir_ / "model.safetensors").string());
  ASSERT_TRUE(st.ok());
  for (const char* which : {"q", "k"}) {
    const auto* hf = (*st)->find(fmt::format("model.layers.1.self_attn.{}_proj.weight", which));
    const TensorRef* g = t.find(fmt::format("blk.1.attn_{}.weight", which));
    const int64_t rows = hf->shape[0], hd = 16;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t head = r / hd, i = (r % hd) / 2, part = r % 2;
      const int64_t src = head * hd + part * (hd / 2) + i;
      EXPECT_EQ(std::memcmp(static_cast<const float*>(g->data) + r * 64, static_cast<const float*>(hf->data) + src * 64,
                            64 * 4),
                0)
          << which << " row " << r;
    }
  }
  // V is not permuted.
  EXPECT_EQ(std::memcmp(t.find("blk.1.attn_v.weight")->data,
                        (*st)->find("model.layers.1.self_attn.v_proj.weight")->data, 32 * 64 * 4),
            0);
}

TEST_F(HfFolderTest, PermutedRowsWithAdjacentRopeEqualHfRowsWithNeoxRope) {
  write_folder("LlamaForCausalLM", /*tied=*/true);
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.error();
  EXPECT_EQ((*ckpt)->tensors().find("output.weight"), nullptr);
  auto permuted = create_model((*ckpt)->config(), (*ckpt)->tensors(), kernels::best_kernels());
  ASSERT_TRUE(permuted.ok()) << permuted.error();
  // The same folder read as HF does: rows as stored, RoPE over halves.
  TensorSet unpermuted = (*ckpt)->tensors();
  auto st = format::SafetensorsFile::open((dir_ / "model.safetensors").string());
  ASSERT_TRUE(st.ok());
  for (int l = 0; l < 2; ++l)
    for (const char* which : {"q", "k"})
      unpermuted.tensors[fmt::format("blk.{}.attn_{}.weight", l, which)].data =
          (*st)->find(fmt::format("model.layers.{}.self_attn.{}_proj.weight", l, which))->data;
  ModelConfig neox = (*ckpt)->config();
  neox.rope_neox = true;
  auto reference = create_model(neox, unpermuted, kernels::best_kernels());
  ASSERT_TRUE(reference.ok()) << reference.error();
  const std::vector<float> a = logits(**permuted), b = logits(**reference);
  ASSERT_EQ(a.size(), b.size());
  float max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
    max_abs = std::max(max_abs, std::fabs(b[i]));
  }
  EXPECT_GT(max_abs, 0.01f);
  EXPECT_LT(max_diff, 1e-4f * max_abs);
  // And the permutation matters: un-permuted rows with adjacent pairs are another model.
  ModelConfig wrong = neox;
  wrong.rope_neox = false;
  auto mismatched = create_model(wrong, unpermuted, kernels::best_kernels());
  ASSERT_TRUE(mismatched.ok());
  const std::vector<float> c = logits(**mismatched);
  float wrong_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) wrong_diff = std::max(wrong_diff, std::fabs(c[i] - b[i]));
  EXPECT_GT(wrong_diff, 100 * max_diff);
}

TEST_F(HfFolderTest, FolderAndConvertedGgufGiveBitIdenticalLogits) {
  for (const char* arch : {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"}) {
    SCOPED_TRACE(arch);
    write_folder(arch, /*tied=*/std::string(arch) != "LlamaForCausalLM");
    auto ckpt = HfCheckpoint::open(dir_.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    const std::string gguf_path = (dir_ / "out.gguf").string();
    format::GgufWriter metadata = hf_gguf_metadata(**ckpt, "tiny");
    const Status converted = write_hf_gguf(**ckpt, metadata, gguf_path);
    ASSERT_TRUE(converted.ok()) << converted.message();
    auto gguf = format::GgufFile::open(gguf_path);
    ASSERT_TRUE(gguf.ok()) << gguf.error();
    const std::string arch_name = (*ckpt)->config().architecture;
    EXPECT_EQ(*gguf->get_string("general.architecture").value(), arch_name);
    EXPECT_EQ(gguf->find_tensor("blk.0.attn_q.bias") != nullptr, arch_name == "qwen2");
    EXPECT_EQ(gguf->find_tensor("blk.0.attn_k_norm.weight") != nullptr, arch_name == "qwen3");
    auto from_gguf = create_model(*gguf, kernels::best_kernels());
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.error();
    EXPECT_EQ((*from_gguf)->config().head_dim, (*ckpt)->config().head_dim);
    EXPECT_EQ((*from_gguf)->config().rope_neox, (*ckpt)->config().rope_neox);
    for (bool fusion : {true, false}) {
      ModelOptions options;
      options.fusion = fusion;
      auto from_folder = create_model((*ckpt)->config(), (*ckpt)->tensors(), kernels::best_kernels(), options);
      ASSERT_TRUE(from_folder.ok()) << from_folder.error();
      const std::vector<float> a = logits(**from_folder), b = logits(**from_gguf);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "fusion " << fusion;
    }
    ModelOptions naive;
    naive.attention = AttentionKind::kNaive;
    auto naive_model = create_model((*ckpt)->config(), (*ckpt)->tensors(), kernels::best_kernels(), naive);
    ASSERT_TRUE(naive_model.ok());
    const std::vector<float> a = logits(**naive_model), b = logits(**from_gguf);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f) << i;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
}

TEST_F(HfFolderTest, ShapeDisagreeingWithConfigNamesFileTensorAndField) {
  write_folder("Qwen3ForCausalLM", true, [](std::string& name, std::vector<int64_t>& shape) {
    if (name == "model.layers.1.self_attn.k_proj.weight") shape = {32, 64};
  });
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_THAT(ckpt.error(), HasSubstr("model.safetensors: model.layers.1.self_attn.k_proj.weight has shape [32, 64]"));
  EXPECT_THAT(ckpt.error(), HasSubstr("config.json gives [64, 64] (num_key_value_heads * head_dim, hidden_size)"));
}

TEST_F(HfFolderTest, MissingTensorAndUnknownArchitectureAreClearErrors) {
  write_folder("Qwen2ForCausalLM", true, [](std::string& name, std::vector<int64_t>&) {
    if (name == "model.layers.0.self_attn.v_proj.bias") name = "model.layers.0.self_attn.v_proj.bias_renamed";
  });
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_THAT(ckpt.error(),
              HasSubstr("missing tensor model.layers.0.self_attn.v_proj.bias (needed by Qwen2ForCausalLM)"));

  std::ofstream(dir_ / "config.json") << R"({"architectures": ["MambaForCausalLM"]})";
  auto unknown = HfCheckpoint::open(dir_.string());
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error(),
              HasSubstr((dir_ / "config.json").string() + ": architectures[0] = \"MambaForCausalLM\""));
  fs::remove(dir_ / "config.json");
  EXPECT_FALSE(is_hf_model_folder(dir_.string()));
}

}  // namespace
}  // namespace pagoda
