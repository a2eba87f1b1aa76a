// The qwen3next family (model/arch_qwen3next.cc) on gen-model's tiny-qwen3next GGUF (synth/random_qwen35_writer.h):
// - the family's keys become its switches (Qwen3.5's DeltaNet keys and layer layout, the value heads grouped by key
//   head, the experts with their gated shared expert, renormalized top-k), no M-RoPE sections are written, and each
//   DeltaNet layer loads beta and alpha as one fused ssm_ba matrix;
// - the grouped layout is Qwen3.5's tiled one with its heads reordered: the same weights written as a qwen35moe file
//   (value heads moved from grouped to tiled order, as llama.cpp's Qwen3.5 converter moves them, ssm_ba split into
//   ssm_beta and ssm_alpha) give the same logits;
// - a prompt gives the same logits, within float rounding, whole, in chunks and one token at a time;
// - a file with the older fused ssm_in projection, or without experts, is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "kernels/kernels.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/chunked_prompt_logits.h"
#include "support/qwen35_test_files.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_qwen35_writer.h"

namespace pagoda {
namespace {

constexpr int32_t kQwen3NextPromptLength = 37;
constexpr int32_t kQwen3NextVocab = 512;

class Qwen3NextTest : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen3next");
    ASSERT_TRUE(shape.has_value());
    shape_ = *shape;
    file_ = testing::write_random_qwen35_file(shape_, path("tiny-qwen3next.gguf"));
    ASSERT_TRUE(file_);
    prompt_ = testing::strided_prompt(kQwen3NextPromptLength, kQwen3NextVocab);
  }

  std::vector<float> logits(const format::GgufFile& file, int32_t chunk) const {
    auto m = create_model(file, kernels::best_kernels(), {});
    EXPECT_TRUE(m.ok()) << m.error();
    if (!m.ok()) return {};
    return testing::chunked_prompt_logits(**m, prompt_, chunk);
  }

  synth::ModelShape shape_;
  std::unique_ptr<format::GgufFile> file_;
  std::vector<TokenId> prompt_;
};

TEST_F(Qwen3NextTest, KeysBecomeTheFamilysSwitches) {
  auto c = model_config_from_gguf(*file_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "qwen3next");
  EXPECT_TRUE(c->rope_neox);
  EXPECT_TRUE(c->is_delta_net());
  EXPECT_TRUE(c->delta_net_grouped_v_heads);
  EXPECT_TRUE(c->attn_output_gate);
  EXPECT_TRUE(c->ffn_norm_is_post_attention_norm);
  EXPECT_EQ(c->layer_is_conv, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c->delta_net_k_heads, 2);
  EXPECT_EQ(c->delta_net_v_heads, 4);
  EXPECT_EQ(c->delta_net_head_dim, 32);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_used, 2);
  EXPECT_EQ(c->expert_hidden_dim, 64);
  EXPECT_TRUE(c->expert_weights_norm);
  EXPECT_EQ(c->shared_expert_hidden_dim, 96);
  EXPECT_TRUE(c->shared_expert_gated);
  EXPECT_EQ(c->state_floats_per_seq(), 6 * (3 * 256 + 4 * 32 * 32));
  EXPECT_EQ(file_->find("qwen3next.rope.dimension_sections"), nullptr);

  auto w = model_weights_from_gguf(*file_, *c);
  ASSERT_TRUE(w.ok()) << w.error();
  for (int32_t l = 0; l < c->num_layers; ++l) {
    const LayerWeights& lw = w->layers[size_t(l)];
    EXPECT_EQ(lw.experts.size(), 8u);
    EXPECT_EQ(lw.shared_expert.w_up.num_rows, 96);
    if (c->is_conv_layer(l)) {
      EXPECT_EQ(lw.dn_beta_alpha.num_rows, 8);  // beta and alpha of 4 value heads
      EXPECT_EQ(lw.dn_beta.data, nullptr);
      EXPECT_EQ(lw.dn_alpha.data, nullptr);
      EXPECT_EQ(lw.dn_qkv.num_rows, 256);
    } else {
      EXPECT_EQ(lw.wq.num_rows, 2 * 4 * 32);  // each head's query and gate
    }
  }
}

// An f32 tensor's rows (of dims[0] values; a vector's: of one value) reordered: out row i is row from[i].
std::vector<float> qwen3next_gathered_rows(const format::GgufTensorInfo& t, const std::vector<int64_t>& from) {
  const int64_t cols = t.dims.size() == 1 ? 1 : int64_t(t.dims[0]);
  const float* in = static_cast<const float*>(t.data);
  std::vector<float> out;
  for (int64_t r : from) out.insert(out.end(), in + r * cols, in + (r + 1) * cols);
  return out;
}

TEST_F(Qwen3NextTest, GroupedHeadsAreQwen35sTiledHeadsReordered) {
  // Value head g * R + r of the grouped order (K key heads of R value heads) is head r * K + g of the tiled one.
  const int64_t k = 2, r_per_k = 2, v = k * r_per_k, d = 32, key_dim = k * d;
  std::vector<int64_t> grouped_of_tiled(static_cast<size_t>(v));  // tiled head -> its grouped index
  for (int64_t g = 0; g < k; ++g)
    for (int64_t r = 0; r < r_per_k; ++r) grouped_of_tiled[size_t(r * k + g)] = g * r_per_k + r;
  const auto head_rows = [&](int64_t offset, int64_t width) {  // rows of tiled heads, each `width` wide
    std::vector<int64_t> rows;
    for (int64_t h = 0; h < v; ++h)
      for (int64_t i = 0; i < width; ++i) rows.push_back(offset + grouped_of_tiled[size_t(h)] * width + i);
    return rows;
  };
  std::vector<std::vector<float>> owned;  // the rewritten tensors' data, alive until the file is written
  owned.reserve(file_->tensors().size() * 2);
  format::GgufWriter qwen35;
  for (const auto& [key, value] : file_->metadata()) {
    std::string name = key;
    if (name.rfind("qwen3next.", 0) == 0) name = "qwen35moe." + name.substr(10);
    qwen35.set(name, key == "general.architecture" ? format::GgufValue::string("qwen35moe") : value);
  }
  for (const format::GgufTensorInfo& t : file_->tensors()) {
    const std::string& n = t.name;
    const auto add = [&](const std::string& name, std::vector<int64_t> dims, std::vector<float> data) {
      owned.push_back(std::move(data));
      qwen35.add_tensor(name, format::GgmlType::kF32, std::move(dims), owned.back().data(), owned.back().size() * 4);
    };
    const auto ends = [&](const char* suffix) { return n.size() > strlen(suffix) && n.ends_with(suffix); };
    const std::string layer = n.substr(0, n.find('.', 4) + 1);  // "blk.N."
    std::vector<int64_t> dims(t.dims.begin(), t.dims.end());
    if (ends(".attn_qkv.weight")) {
      std::vector<int64_t> rows(size_t(2 * key_dim));
      for (int64_t i = 0; i < 2 * key_dim; ++i) rows[size_t(i)] = i;
      for (int64_t row : head_rows(2 * key_dim, d)) rows.push_back(row);
      add(n, dims, qwen3next_gathered_rows(t, rows));
    } else if (ends(".attn_gate.weight")) {
      add(n, dims, qwen3next_gathered_rows(t, head_rows(0, d)));
    } else if (ends(".ssm_ba.weight")) {
      std::vector<int64_t> beta, alpha;  // ssm_ba's rows: per key head g, R betas then R alphas
      for (int64_t h = 0; h < v; ++h) {
        const int64_t grouped = grouped_of_tiled[size_t(h)], g = grouped / r_per_k, r = grouped % r_per_k;
        beta.push_back(g * 2 * r_per_k + r);
        alpha.push_back(g * 2 * r_per_k + r_per_k + r);
      }
      add(layer + "ssm_beta.weight", {dims[0], v}, qwen3next_gathered_rows(t, beta));
      add(layer + "ssm_alpha.weight", {dims[0], v}, qwen3next_gathered_rows(t, alpha));
    } else if (ends(".ssm_conv1d.weight")) {  // [conv_dim][taps]: V channels reordered
      std::vector<int64_t> rows(size_t(2 * key_dim));
      for (int64_t i = 0; i < 2 * key_dim; ++i) rows[size_t(i)] = i;
      for (int64_t row : head_rows(2 * key_dim, d)) rows.push_back(row);
      add(n, dims, qwen3next_gathered_rows(t, rows));
    } else if (ends(".ssm_dt.bias") || ends(".ssm_a")) {
      add(n, dims, qwen3next_gathered_rows(t, head_rows(0, 1)));
    } else if (ends(".ssm_out.weight")) {  // [dim][value_dim]: columns reordered
      const float* in = static_cast<const float*>(t.data);
      const int64_t cols = dims[0], rows = dims[1];
      const std::vector<int64_t> from = head_rows(0, d);
      std::vector<float> out(size_t(cols * rows));
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t col = 0; col < cols; ++col) out[size_t(row * cols + col)] = in[row * cols + from[size_t(col)]];
      add(n, dims, std::move(out));
    } else {
      qwen35.add_tensor(n, t.type, t.dims, t.data, t.size_bytes);
    }
  }
  ASSERT_TRUE(qwen35.write(path("tiled.gguf")).ok());
  std::unique_ptr<format::GgufFile> tiled = testing::open_gguf_file(path("tiled.gguf"));
  ASSERT_TRUE(tiled);
  auto c = model_config_from_gguf(*tiled);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "qwen35moe");
  EXPECT_FALSE(c->delta_net_grouped_v_heads);
  const std::vector<float> next = logits(*file_, kQwen3NextPromptLength);
  ASSERT_EQ(next.size(), size_t(kQwen3NextPromptLength) * kQwen3NextVocab);
  EXPECT_LT(testing::max_abs_difference(logits(*tiled, kQwen3NextPromptLength), next), 1e-5f);
}

TEST_F(Qwen3NextTest, WholeChunkedAndTokenByTokenPrefillsGiveTheSameLogits) {
  const std::vector<float> whole = logits(*file_, kQwen3NextPromptLength);
  ASSERT_EQ(whole.size(), size_t(kQwen3NextPromptLength) * kQwen3NextVocab);
  EXPECT_GT(*std::max_element(whole.begin(), whole.end()), 0.0f);
  for (int32_t chunk : {1, 5, 16})
    EXPECT_LT(testing::max_abs_difference(logits(*file_, chunk), whole), 1e-5f) << "chunks of " << chunk;
}

// The file with one key left out, or with one tensor more.
std::string qwen3next_edited(const format::GgufFile& file, const std::string& path, const std::string& drop_key,
                             const std::string& extra_tensor) {
  return testing::rewritten_gguf(
      file, path,
      [&](const std::string& key, const format::GgufValue& value) {
        return key == drop_key ? std::nullopt : std::optional<format::GgufValue>(value);
      },
      extra_tensor);
}

TEST_F(Qwen3NextTest, TheOlderFusedProjectionAndAFileWithoutExpertsAreRefusedByName) {
  std::unique_ptr<format::GgufFile> fused =
      testing::open_gguf_file(qwen3next_edited(*file_, path("fused.gguf"), "", "blk.0.ssm_in.weight"));
  ASSERT_TRUE(fused);
  auto c = model_config_from_gguf(*fused);
  ASSERT_TRUE(c.ok()) << c.error();
  auto w = model_weights_from_gguf(*fused, *c);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find("blk.0.ssm_in.weight is the older fused [q, k, v, z] projection"), std::string::npos)
      << w.error();

  std::unique_ptr<format::GgufFile> dense =
      testing::open_gguf_file(qwen3next_edited(*file_, path("dense.gguf"), "qwen3next.expert_count", ""));
  ASSERT_TRUE(dense);
  auto d = model_config_from_gguf(*dense);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("qwen3next needs qwen3next.expert_count"), std::string::npos) << d.error();
}

}  // namespace
}  // namespace pagoda
