// The deepseek2 family (model/arch_deepseek2.cc, mla_attention.cc) on gen-model's tiny-deepseek2 and
// tiny-deepseek2-lite GGUFs (synth/random_deepseek2_writer.h):
// - the family's keys become its switches (the latent attention's ranks and head sizes, one KV head whose row is the
//   latent and the rope key, the leading dense layer, sigmoid routing with its selection bias and expert groups, the
//   shared experts), and each layer loads the matrices its kind has (the q LoRA or attn_q, per-head attn_k_b and
//   attn_v_b slices, the dense FFN or the experts);
// - the cache stores one row of kv_lora_rank + rope values a token and no V (V is read from K), and refuses a V type
//   other than K's by name;
// - a prompt gives the same logits whole, in chunks and one token at a time, and the flash kernel the naive
//   reference's within float rounding, with and without the q LoRA;
// - the keys written back by the family (model_gguf_metadata) read as the same config and give the same logits;
// - a file converted before the latent projection was split (attn_kv_b, no key_length_mla) is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "model/hf_gguf.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/chunked_prompt_logits.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_deepseek2_writer.h"

namespace pagoda {
namespace {

constexpr int32_t kDeepseek2PromptLength = 37;
constexpr int32_t kDeepseek2Vocab = 512;

class Deepseek2Test : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    for (const char* name : {"tiny-deepseek2", "tiny-deepseek2-lite"}) {
      std::optional<synth::ModelShape> shape = synth::find_model_shape(name);
      ASSERT_TRUE(shape.has_value()) << name;
      synth::RandomModelOptions o{*shape, format::GgmlType::kF32, 7, path(std::string(name) + ".gguf")};
      const Status written = synth::write_random_deepseek2_model(o);
      ASSERT_TRUE(written.ok()) << written.message();
    }
    file_ = open(path("tiny-deepseek2.gguf"));
    lite_ = open(path("tiny-deepseek2-lite.gguf"));
    ASSERT_TRUE(file_ && lite_);
    for (int32_t i = 0; i < kDeepseek2PromptLength; ++i) prompt_.push_back(TokenId((i * 37 + 11) % kDeepseek2Vocab));
  }

  static std::unique_ptr<format::GgufFile> open(const std::string& path) {
    auto file = format::GgufFile::open(path);
    EXPECT_TRUE(file.ok()) << file.error();
    return file.ok() ? std::make_unique<format::GgufFile>(std::move(*file)) : nullptr;
  }

  std::vector<float> logits(const format::GgufFile& file, int32_t chunk,
                            AttentionKind attention = AttentionKind::kFlash) const {
    ModelOptions options;
    options.attention = attention;
    auto m = create_model(file, kernels::best_kernels(), options);
    EXPECT_TRUE(m.ok()) << m.error();
    if (!m.ok()) return {};
    return testing::chunked_prompt_logits(**m, prompt_, chunk);
  }

  std::unique_ptr<format::GgufFile> file_, lite_;
  std::vector<TokenId> prompt_;
};

// The largest difference between two runs' logits; the logits are of order 1.
float deepseek2_max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float most = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

TEST_F(Deepseek2Test, KeysBecomeTheFamilysSwitches) {
  auto c = model_config_from_gguf(*file_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "deepseek2");
  EXPECT_FALSE(c->rope_neox);
  EXPECT_TRUE(c->is_mla());
  EXPECT_EQ(c->mla_kv_lora_rank, 64);
  EXPECT_EQ(c->mla_q_lora_rank, 64);
  EXPECT_EQ(c->mla_key_dim, 64);
  EXPECT_EQ(c->mla_value_dim, 32);
  EXPECT_EQ(c->rope_dim, 32);
  EXPECT_EQ(c->mla_nope_dim(), 32);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->head_dim, 96);  // the cache row: latent, then the rope key
  EXPECT_EQ(c->leading_dense_layers, 1);
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_used, 2);
  EXPECT_EQ(c->shared_expert_hidden_dim, 32);
  EXPECT_FALSE(c->shared_expert_gated);
  EXPECT_TRUE(c->expert_gating_sigmoid);
  EXPECT_EQ(c->expert_groups, 4);
  EXPECT_EQ(c->expert_groups_used, 2);
  EXPECT_TRUE(c->expert_weights_norm);
  EXPECT_FLOAT_EQ(c->expert_weights_scale, 2.5f);
  EXPECT_EQ(c->rope_scaling, RopeScalingType::kYarn);
  EXPECT_FLOAT_EQ(c->yarn_log_multiplier, 0.0707f);
  EXPECT_FALSE(c->is_moe_layer(0));
  EXPECT_TRUE(c->is_moe_layer(1));

  auto w = model_weights_from_gguf(*file_, *c);
  ASSERT_TRUE(w.ok()) << w.error();
  for (int32_t l = 0; l < c->num_layers; ++l) {
    const LayerWeights& lw = w->layers[size_t(l)];
    EXPECT_EQ(lw.mla_q_a.num_rows, 64);
    EXPECT_EQ(lw.mla_q_b.num_rows, 4 * 64);
    EXPECT_EQ(lw.wq.data, nullptr);
    EXPECT_EQ(lw.mla_kv_a.num_rows, 96);
    ASSERT_EQ(lw.mla_k_b.size(), 4u);
    EXPECT_EQ(lw.mla_k_b[3].num_rows, 64);  // latent rows of the nope columns
    EXPECT_EQ(lw.mla_k_b[3].num_cols, 32);
    ASSERT_EQ(lw.mla_v_b.size(), 4u);
    EXPECT_EQ(lw.mla_v_b[3].num_rows, 32);
    EXPECT_EQ(lw.mla_v_b[3].num_cols, 64);
    EXPECT_EQ(lw.wo.num_cols, 4 * 32);
    if (l == 0) {
      EXPECT_TRUE(lw.experts.empty());
      EXPECT_EQ(lw.w_gate.num_rows, 192);
    } else {
      EXPECT_EQ(lw.experts.size(), 8u);
      EXPECT_EQ(lw.expert_selection_bias.size(), 8u);
      EXPECT_EQ(lw.shared_expert.w_up.num_rows, 32);
      EXPECT_EQ(lw.w_gate.data, nullptr);
    }
  }

  auto lite = model_config_from_gguf(*lite_);
  ASSERT_TRUE(lite.ok()) << lite.error();
  EXPECT_EQ(lite->mla_q_lora_rank, 0);
  EXPECT_FALSE(lite->expert_gating_sigmoid);
  EXPECT_FALSE(lite->expert_weights_norm);
  EXPECT_EQ(lite->expert_groups, 0);
  EXPECT_EQ(lite->shared_expert_hidden_dim, 64);  // two shared experts of 32
  auto lw = model_weights_from_gguf(*lite_, *lite);
  ASSERT_TRUE(lw.ok()) << lw.error();
  EXPECT_EQ(lw->layers[1].wq.num_rows, 8 * 64);
  EXPECT_EQ(lw->layers[1].mla_q_a.data, nullptr);
  EXPECT_TRUE(lw->layers[1].expert_selection_bias.empty());
}

TEST_F(Deepseek2Test, TheCacheHoldsTheLatentAndRopeKeyAndNoV) {
  auto c = model_config_from_gguf(*file_);
  ASSERT_TRUE(c.ok()) << c.error();
  const KvShape shape = c->kv_shape();
  EXPECT_TRUE(shape.v_in_k);
  EXPECT_EQ(shape.kv_dim, 96);
  EXPECT_EQ(KvStorage::bytes_per_token_layer(shape, KvDType::kF16), 96 * 2);
  EXPECT_EQ(KvStorage::bytes_per_token_layer(shape, KvDType::kF32), 96 * 4);
  KvStorage storage(shape, 2, 16, KvDType::kF16);
  const KvCacheView view = storage.view();
  EXPECT_EQ(view.v, view.k);
  EXPECT_EQ(view.v_row_bytes, view.k_row_bytes);
  EXPECT_EQ(storage.total_bytes(), int64_t(c->num_layers) * 2 * 16 * 96 * 2);
  const std::string unfit = KvStorage::kv_types_fit(shape, KvCacheTypes{KvDType::kQ8_0, KvDType::kF16});
  EXPECT_NE(unfit.find("V is read from its K cache"), std::string::npos) << unfit;
  EXPECT_TRUE(KvStorage::kv_types_fit(shape, KvCacheTypes{KvDType::kQ8_0, KvDType::kQ8_0}).empty());
}

TEST_F(Deepseek2Test, WholeChunkedAndTokenByTokenPrefillsGiveTheSameLogits) {
  for (const format::GgufFile* file : {file_.get(), lite_.get()}) {
    const std::vector<float> whole = logits(*file, kDeepseek2PromptLength);
    ASSERT_EQ(whole.size(), size_t(kDeepseek2PromptLength) * kDeepseek2Vocab);
    EXPECT_GT(*std::max_element(whole.begin(), whole.end()), 0.0f);
    for (int32_t chunk : {1, 7, 16})
      EXPECT_EQ(deepseek2_max_difference(logits(*file, chunk), whole), 0.0f) << file->name() << ": chunks of " << chunk;
    EXPECT_LT(deepseek2_max_difference(logits(*file, kDeepseek2PromptLength, AttentionKind::kNaive), whole), 1e-5f)
        << file->name() << ": naive attention";
  }
}

// The file with its metadata replaced by what the family writes for its config (and the vocabulary kept).
std::string deepseek2_rewritten(const format::GgufFile& file, const ModelConfig& c, const std::string& path) {
  format::GgufWriter w = model_gguf_metadata(c, "rewritten", format::GgmlType::kF32);
  for (const auto& [key, value] : file.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
  for (const format::GgufTensorInfo& t : file.tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

TEST_F(Deepseek2Test, TheKeysWrittenBackReadAsTheSameModel) {
  for (const format::GgufFile* file : {file_.get(), lite_.get()}) {
    auto c = model_config_from_gguf(*file);
    ASSERT_TRUE(c.ok()) << c.error();
    std::unique_ptr<format::GgufFile> again = open(deepseek2_rewritten(*file, *c, path("again.gguf")));
    ASSERT_TRUE(again);
    auto d = model_config_from_gguf(*again);
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_EQ(d->mla_kv_lora_rank, c->mla_kv_lora_rank);
    EXPECT_EQ(d->mla_q_lora_rank, c->mla_q_lora_rank);
    EXPECT_EQ(d->mla_key_dim, c->mla_key_dim);
    EXPECT_EQ(d->mla_value_dim, c->mla_value_dim);
    EXPECT_EQ(d->leading_dense_layers, c->leading_dense_layers);
    EXPECT_EQ(d->shared_expert_hidden_dim, c->shared_expert_hidden_dim);
    EXPECT_EQ(d->expert_gating_sigmoid, c->expert_gating_sigmoid);
    EXPECT_EQ(d->expert_groups, c->expert_groups);
    EXPECT_EQ(d->expert_groups_used, c->expert_groups_used);
    EXPECT_EQ(d->expert_weights_norm, c->expert_weights_norm);
    EXPECT_EQ(d->expert_weights_scale, c->expert_weights_scale);
    EXPECT_EQ(d->yarn_log_multiplier, c->yarn_log_multiplier);
    EXPECT_EQ(logits(*again, kDeepseek2PromptLength), logits(*file, kDeepseek2PromptLength)) << file->name();
  }
}

// The file with one key left out, and one tensor renamed.
std::string deepseek2_edited(const format::GgufFile& file, const std::string& path, const std::string& drop_key,
                             const std::string& from_tensor, const std::string& to_tensor) {
  format::GgufWriter w;
  for (const auto& [key, value] : file.metadata())
    if (key != drop_key) w.set(key, value);
  for (const format::GgufTensorInfo& t : file.tensors())
    w.add_tensor(t.name == from_tensor ? to_tensor : t.name, t.type, t.dims, t.data, t.size_bytes);
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

TEST_F(Deepseek2Test, FilesFromBeforeTheSplitAreRefusedByName) {
  std::unique_ptr<format::GgufFile> unsplit =
      open(deepseek2_edited(*file_, path("unsplit.gguf"), "", "blk.0.attn_k_b.weight", "blk.0.attn_kv_b.weight"));
  ASSERT_TRUE(unsplit);
  auto c = model_config_from_gguf(*unsplit);
  ASSERT_TRUE(c.ok()) << c.error();
  auto w = model_weights_from_gguf(*unsplit, *c);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find("blk.0.attn_kv_b.weight is the unsplit latent projection"), std::string::npos) << w.error();

  std::unique_ptr<format::GgufFile> old =
      open(deepseek2_edited(*file_, path("old.gguf"), "deepseek2.attention.key_length_mla", "", ""));
  ASSERT_TRUE(old);
  auto d = model_config_from_gguf(*old);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("deepseek2 without deepseek2.attention.key_length_mla"), std::string::npos) << d.error();
}

}  // namespace
}  // namespace pagoda
