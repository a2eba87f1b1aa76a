// A mixture-of-experts layer with a shared expert (Qwen2-MoE), on a tiny random HF folder:
// - the forward pass equals a plain reference computed here (double precision, token by token): routed top-k of the
//   router's softmax, NOT renormalized unless norm_topk_prob, plus the shared expert's output times
//   sigmoid(x . shared_expert_gate); the attention output projection is zero so that each token's FFN is all there is;
// - the folder and the GGUF converted from it (the gate vector stored f32 [dim, 1], the shared width as
//   qwen2moe.expert_shared_feed_forward_length) give bit-identical logits, and so does the GGUF without either width
//   key (llama.cpp's defaults);
// - quantized to Q8_0 / Q4_0 (the gate vector stays f32), with the repacked layouts and without, the logits stay close
//   to those of the same weights dequantized to f32.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "format/gguf_quantizer.h"
#include "format/gguf_reader.h"
#include "format/safetensors_writer.h"
#include "kv/kv_storage.h"
#include "model/hf_checkpoint.h"
#include "model/hf_gguf.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/temp_dir_test.h"

namespace pagoda {
namespace {

constexpr int64_t kDim = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kHidden = 48, kLayers = 2, kVocab = 50;
constexpr int64_t kExperts = 4, kUsed = 2, kExpertHidden = 32, kSharedHidden = 96;
constexpr float kEps = 1e-6f;
const std::vector<TokenId> kPrompt = {1, 17, 49, 3, 30, 42, 7};

class SharedExpertTest : public testing_support::TempDirTest {
 protected:
  // config.json and model.safetensors of a Qwen2-MoE; the values stay in values_ (by HF name) for the reference.
  void write_folder(bool norm_topk_prob, bool zero_attention_output) {
    std::ofstream(dir_ / "config.json") << fmt::format(
        R"({{"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": {}, "intermediate_size": {},
        "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {}, "vocab_size": {},
        "max_position_embeddings": 64, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
        "num_experts": {}, "num_experts_per_tok": {}, "moe_intermediate_size": {},
        "shared_expert_intermediate_size": {}, "norm_topk_prob": {}, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "use_sliding_window": false}})",
        kDim, kHidden, kLayers, kHeads, kKvHeads, kVocab, kExperts, kUsed, kExpertHidden, kSharedHidden,
        norm_topk_prob ? "true" : "false");
    values_.clear();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-0.15f, 0.15f);
    format::SafetensorsWriter w;
    // scale 0: zeros; norm: 1 + u.
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, bool norm = false) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<float>& v = values_[name];
      v.resize(size_t(n));
      for (float& x : v) x = norm ? 1.0f + u(rng) : scale * u(rng);
      const std::vector<float>* data = &v;
      w.add_tensor(name, DType::kF32, shape,
                   [data](std::span<uint8_t> dst) { std::memcpy(dst.data(), data->data(), dst.size()); });
    };
    add("model.embed_tokens.weight", {kVocab, kDim}, 1.0f);
    for (int64_t l = 0; l < kLayers; ++l) {
      const std::string p = fmt::format("model.layers.{}.", l);
      add(p + "input_layernorm.weight", {kDim}, 0, true);
      add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kDim}, 1.0f);
      add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kDim}, 1.0f);
      add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kDim}, 1.0f);
      add(p + "self_attn.q_proj.bias", {kHeads * kHeadDim}, 1.0f);
      add(p + "self_attn.k_proj.bias", {kKvHeads * kHeadDim}, 1.0f);
      add(p + "self_attn.v_proj.bias", {kKvHeads * kHeadDim}, 1.0f);
      add(p + "self_attn.o_proj.weight", {kDim, kHeads * kHeadDim}, zero_attention_output ? 0.0f : 1.0f);
      add(p + "post_attention_layernorm.weight", {kDim}, 0, true);
      add(p + "mlp.gate.weight", {kExperts, kDim}, 2.0f);
      for (int64_t e = 0; e < kExperts; ++e) {
        const std::string x = fmt::format("{}mlp.experts.{}.", p, e);
        add(x + "gate_proj.weight", {kExpertHidden, kDim}, 1.0f);
        add(x + "up_proj.weight", {kExpertHidden, kDim}, 1.0f);
        add(x + "down_proj.weight", {kDim, kExpertHidden}, 1.0f);
      }
      add(p + "mlp.shared_expert.gate_proj.weight", {kSharedHidden, kDim}, 1.0f);
      add(p + "mlp.shared_expert.up_proj.weight", {kSharedHidden, kDim}, 1.0f);
      add(p + "mlp.shared_expert.down_proj.weight", {kDim, kSharedHidden}, 1.0f);
      // Large enough that sigmoid(x . gate) spreads over (0, 1) rather than sitting at 1/2.
      add(p + "mlp.shared_expert_gate.weight", {1, kDim}, 4.0f);
    }
    add("model.norm.weight", {kDim}, 0, true);
    add("lm_head.weight", {kVocab, kDim}, 1.0f);
    ASSERT_TRUE(w.write((dir_ / "model.safetensors").string()).ok());
  }

  const float* value(const std::string& name) const { return values_.at(name).data(); }

  static std::vector<double> rmsnorm(const std::vector<double>& x, const float* w) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + double(kEps));
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
    return y;
  }
  static std::vector<double> matvec(const float* w, int64_t rows, const std::vector<double>& x) {
    std::vector<double> y(size_t(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < x.size(); ++c) y[size_t(r)] += double(w[r * int64_t(x.size()) + int64_t(c)]) * x[c];
    return y;
  }
  // down(silu(gate h) * up h) of the FFN whose HF matrices are `prefix`{gate,up,down}_proj.weight.
  std::vector<double> ffn(const std::string& prefix, int64_t hidden, const std::vector<double>& h) const {
    std::vector<double> g = matvec(value(prefix + "gate_proj.weight"), hidden, h);
    const std::vector<double> up = matvec(value(prefix + "up_proj.weight"), hidden, h);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * up[i];
    return matvec(value(prefix + "down_proj.weight"), kDim, g);
  }

  // The reference logits of one token when the attention output projection is zero: x += moe(rmsnorm(x)) per layer.
  std::vector<double> reference_logits(TokenId token, bool renormalize) const {
    const float* embd = value("model.embed_tokens.weight") + int64_t(token) * kDim;
    std::vector<double> x(embd, embd + kDim);
    for (int64_t l = 0; l < kLayers; ++l) {
      const std::string p = fmt::format("model.layers.{}.", l);
      const std::vector<double> h = rmsnorm(x, value(p + "post_attention_layernorm.weight"));
      const std::vector<double> router = matvec(value(p + "mlp.gate.weight"), kExperts, h);
      const double top = *std::max_element(router.begin(), router.end());
      std::vector<double> prob(router.size());
      double sum = 0;
      for (size_t e = 0; e < router.size(); ++e) sum += prob[e] = std::exp(router[e] - top);
      for (double& v : prob) v /= sum;
      std::vector<int> order(static_cast<size_t>(kExperts));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[size_t(a)] > prob[size_t(b)]; });
      double chosen = 0;
      for (int64_t j = 0; j < kUsed; ++j) chosen += prob[size_t(order[size_t(j)])];
      std::vector<double> y(size_t(kDim), 0.0);
      for (int64_t j = 0; j < kUsed; ++j) {
        const int e = order[size_t(j)];
        const double weight = renormalize ? prob[size_t(e)] / chosen : prob[size_t(e)];
        const std::vector<double> out = ffn(fmt::format("{}mlp.experts.{}.", p, e), kExpertHidden, h);
        for (int64_t i = 0; i < kDim; ++i) y[size_t(i)] += weight * out[size_t(i)];
      }
      const double gate = matvec(value(p + "mlp.shared_expert_gate.weight"), 1, h)[0];
      const double scale = 1.0 / (1.0 + std::exp(-gate));
      const std::vector<double> shared = ffn(p + "mlp.shared_expert.", kSharedHidden, h);
      for (int64_t i = 0; i < kDim; ++i) x[size_t(i)] += y[size_t(i)] + scale * shared[size_t(i)];
    }
    return matvec(value("lm_head.weight"), kVocab, rmsnorm(x, value("model.norm.weight")));
  }

  // The logits of every prompt token in one prefill, then of one decode step: [8][vocab], flattened.
  static std::vector<float> logits(const Model& m) {
    std::vector<float> out;
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), 2, 8);
    Workspace ws(m.config(), 8, 16, 8, 2);
    const BlockId table[] = {0, 1};
    const int32_t n = int32_t(kPrompt.size());
    std::vector<Pos> positions(kPrompt.size());
    std::vector<int32_t> slots(kPrompt.size()), rows(kPrompt.size());
    std::iota(positions.begin(), positions.end(), 0);
    std::iota(slots.begin(), slots.end(), 0);
    std::iota(rows.begin(), rows.end(), 0);
    const int32_t seq_starts[] = {0, n}, context_lens[] = {n};
    BatchView prefill{kPrompt, positions, slots, seq_starts, context_lens, BlockTableView{table, 1, 2}, rows, {}};
    LogitsView l = m.forward(prefill, kv.view(), ws, pool);
    for (int32_t r = 0; r < l.num_rows; ++r) out.insert(out.end(), l.row(r).begin(), l.row(r).end());
    const TokenId next[] = {5};
    const Pos next_pos[] = {Pos(n)};
    const int32_t next_slot[] = {n}, next_starts[] = {0, 1}, next_lens[] = {n + 1}, next_rows[] = {0};
    BatchView decode{next, next_pos, next_slot, next_starts, next_lens, BlockTableView{table, 1, 2}, next_rows, {}};
    l = m.forward(decode, kv.view(), ws, pool);
    out.insert(out.end(), l.row(0).begin(), l.row(0).end());
    return out;
  }

  // The folder converted to GGUF at `path`.
  void convert(const std::string& path) {
    auto ckpt = HfCheckpoint::open(dir_.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    format::GgufWriter metadata = hf_gguf_metadata(**ckpt, "tiny-qwen2moe");
    const Status converted = write_hf_gguf(**ckpt, metadata, path);
    ASSERT_TRUE(converted.ok()) << converted.message();
  }

  std::map<std::string, std::vector<float>> values_;
};

TEST_F(SharedExpertTest, ForwardEqualsAHandComputedReference) {
  for (bool renormalize : {false, true}) {
    SCOPED_TRACE(renormalize ? "norm_topk_prob true" : "norm_topk_prob false");
    write_folder(renormalize, /*zero_attention_output=*/true);
    auto ckpt = HfCheckpoint::open(dir_.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    EXPECT_EQ((*ckpt)->config().expert_weights_norm, renormalize);
    for (const kernels::KernelTable* table : {kernels::kernels_for(kernels::Isa::kScalar), &kernels::best_kernels()}) {
      auto model = create_model((*ckpt)->config(), (*ckpt)->tensors(), *table);
      ASSERT_TRUE(model.ok()) << model.error();
      const std::vector<float> got = logits(**model);
      std::vector<TokenId> tokens = kPrompt;
      tokens.push_back(5);
      ASSERT_EQ(got.size(), tokens.size() * size_t(kVocab));
      double max_abs = 0, max_diff = 0, max_diff_other_norm = 0;
      for (size_t t = 0; t < tokens.size(); ++t) {
        const std::vector<double> want = reference_logits(tokens[t], renormalize);
        const std::vector<double> other = reference_logits(tokens[t], !renormalize);
        for (int64_t i = 0; i < kVocab; ++i) {
          const double g = got[t * size_t(kVocab) + size_t(i)];
          max_abs = std::max(max_abs, std::fabs(want[size_t(i)]));
          max_diff = std::max(max_diff, std::fabs(g - want[size_t(i)]));
          max_diff_other_norm = std::max(max_diff_other_norm, std::fabs(g - other[size_t(i)]));
        }
      }
      EXPECT_GT(max_abs, 0.1);
      EXPECT_LT(max_diff, 1e-5 * max_abs);
      // And the renormalization is what the flag says: the other choice is visibly another model.
      EXPECT_GT(max_diff_other_norm, 1e-2 * max_abs);
    }
  }
}

TEST_F(SharedExpertTest, ReferenceWithoutTheSharedExpertGateIsAnotherModel) {
  // Guards the reference itself: zeroing the gate vector (sigmoid 1/2 everywhere) changes the logits, so the test
  // above could not pass with the gate ignored.
  write_folder(false, true);
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.error();
  auto model = create_model((*ckpt)->config(), (*ckpt)->tensors(), kernels::best_kernels());
  ASSERT_TRUE(model.ok()) << model.error();
  const std::vector<float> gated = logits(**model);
  for (int64_t l = 0; l < kLayers; ++l) {
    std::vector<float>& g = values_[fmt::format("model.layers.{}.mlp.shared_expert_gate.weight", l)];
    std::fill(g.begin(), g.end(), 0.0f);
  }
  double max_diff = 0;
  for (size_t i = 0; i < size_t(kVocab); ++i)
    max_diff = std::max(max_diff, std::fabs(gated[i] - reference_logits(kPrompt[0], false)[i]));
  EXPECT_GT(max_diff, 1e-3);
}

TEST_F(SharedExpertTest, FolderAndConvertedGgufGiveBitIdenticalLogits) {
  write_folder(false, /*zero_attention_output=*/false);
  const std::string gguf_path = path("tiny.gguf");
  convert(gguf_path);
  auto gguf = format::GgufFile::open(gguf_path);
  ASSERT_TRUE(gguf.ok()) << gguf.error();
  EXPECT_EQ(*gguf->get_string("general.architecture").value(), "qwen2moe");
  EXPECT_EQ(gguf->get_u32("qwen2moe.expert_shared_feed_forward_length")->value(), uint32_t(kSharedHidden));
  EXPECT_EQ(gguf->get_u32("qwen2moe.expert_feed_forward_length")->value(), uint32_t(kExpertHidden));
  EXPECT_FALSE(gguf->get_bool("qwen2moe.expert_weights_norm")->has_value());  // llama.cpp's: never renormalized
  const format::GgufTensorInfo* gate = gguf->find_tensor("blk.1.ffn_gate_inp_shexp.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->dims, (std::vector<int64_t>{kDim, 1}));
  EXPECT_EQ(gate->type, format::GgmlType::kF32);
  const format::GgufTensorInfo* down = gguf->find_tensor("blk.1.ffn_down_shexp.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{kSharedHidden, kDim}));
  auto from_gguf = create_model(*gguf, kernels::best_kernels());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error();
  EXPECT_EQ((*from_gguf)->config().shared_expert_hidden_dim, kSharedHidden);
  EXPECT_TRUE((*from_gguf)->config().shared_expert_gated);
  EXPECT_FALSE((*from_gguf)->config().expert_weights_norm);
  auto ckpt = HfCheckpoint::open(dir_.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.error();
  auto from_folder = create_model((*ckpt)->config(), (*ckpt)->tensors(), kernels::best_kernels());
  ASSERT_TRUE(from_folder.ok()) << from_folder.error();
  const std::vector<float> a = logits(**from_folder), b = logits(**from_gguf);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

// llama.cpp's defaults for the two widths when a qwen2moe GGUF leaves their keys out: an expert's is
// feed_forward_length / expert_used_count, the shared expert's feed_forward_length.
TEST_F(SharedExpertTest, MissingWidthKeysTakeLlamaCppsDefaults) {
  write_folder(false, /*zero_attention_output=*/false);
  const std::string full_path = path("tiny.gguf");
  convert(full_path);
  auto full = format::GgufFile::open(full_path);
  ASSERT_TRUE(full.ok()) << full.error();
  auto full_model = create_model(*full, kernels::best_kernels());
  ASSERT_TRUE(full_model.ok()) << full_model.error();
  const std::vector<float> want = logits(**full_model);
  struct Case {
    const char* dropped;
    int64_t feed_forward_length;
  };
  for (const Case& c : {Case{"qwen2moe.expert_feed_forward_length", kExpertHidden * kUsed},
                        Case{"qwen2moe.expert_shared_feed_forward_length", kSharedHidden}}) {
    SCOPED_TRACE(c.dropped);
    format::GgufWriter w;
    for (const auto& [key, value] : full->metadata())
      if (key != c.dropped) w.set(key, value);
    w.set("qwen2moe.feed_forward_length", format::GgufValue::u32(uint32_t(c.feed_forward_length)));
    for (const format::GgufTensorInfo& t : full->tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    const std::string cut_path = path("cut.gguf");
    ASSERT_TRUE(w.write(cut_path).ok());
    auto cut = format::GgufFile::open(cut_path);
    ASSERT_TRUE(cut.ok()) << cut.error();
    auto model = create_model(*cut, kernels::best_kernels());
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ((*model)->config().expert_hidden_dim, kExpertHidden);
    EXPECT_EQ((*model)->config().shared_expert_hidden_dim, kSharedHidden);
    const std::vector<float> got = logits(**model);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  }
}

// The quantized file against an f32 file of its own dequantized weights: what remains is the Q8_0 rounding of the
// activations the quantized kernels take (and float order), so the logits agree closely; the repacked layouts give
// the file layout's logits.
TEST_F(SharedExpertTest, QuantizedSharedExpertComputesItsDequantizedWeightsRepackedOrNot) {
  write_folder(false, /*zero_attention_output=*/false);
  const std::string f32_path = path("tiny.gguf");
  convert(f32_path);
  for (format::GgmlType type : {format::GgmlType::kQ8_0, format::GgmlType::kQ4_0}) {
    SCOPED_TRACE(format::ggml_type_name(type));
    const std::string q_path = path("tiny-q.gguf");
    auto report = format::quantize_gguf({f32_path, q_path, type, nullptr});
    ASSERT_TRUE(report.ok()) << report.error();
    auto file = format::GgufFile::open(q_path);
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ(file->find_tensor("blk.0.ffn_gate_shexp.weight")->type, type);
    EXPECT_EQ(file->find_tensor("blk.0.ffn_up_shexp.weight")->type, type);
    EXPECT_EQ(file->find_tensor("blk.0.ffn_down_shexp.weight")->type, type);
    EXPECT_EQ(file->find_tensor("blk.0.ffn_gate_inp_shexp.weight")->type, format::GgmlType::kF32);
    // The same weights, dequantized, as f32.
    format::GgufWriter w;
    for (const auto& [key, value] : file->metadata()) w.set(key, value);
    std::vector<std::vector<float>> dequantized;
    for (const format::GgufTensorInfo& t : file->tensors()) {
      const int64_t n = t.num_elements();
      std::vector<float>& v = dequantized.emplace_back(size_t(n));
      dequantize_row(t.type == type ? (type == format::GgmlType::kQ8_0 ? DType::kQ8_0 : DType::kQ4_0) : DType::kF32,
                     t.data, v.data(), n);
      w.add_tensor(t.name, format::GgmlType::kF32, t.dims, v.data(), uint64_t(n) * sizeof(float));
    }
    const std::string d_path = path("tiny-dequantized.gguf");
    ASSERT_TRUE(w.write(d_path).ok());
    auto d_file = format::GgufFile::open(d_path);
    ASSERT_TRUE(d_file.ok()) << d_file.error();
    auto d_model = create_model(*d_file, kernels::best_kernels());
    ASSERT_TRUE(d_model.ok()) << d_model.error();
    const std::vector<float> reference = logits(**d_model);
    float max_abs = 0;
    for (float v : reference) max_abs = std::max(max_abs, std::fabs(v));
    std::vector<std::vector<float>> runs;
    for (bool repack : {true, false}) {
      ModelOptions options;
      options.repack_weights = repack;
      auto model = create_model(*file, kernels::best_kernels(), options);
      ASSERT_TRUE(model.ok()) << model.error();
      runs.push_back(logits(**model));
      float max_diff = 0;
      for (size_t i = 0; i < reference.size(); ++i)
        max_diff = std::max(max_diff, std::fabs(runs.back()[i] - reference[i]));
      // Seen: 1.6% of the largest logit (the Q8_0 activations of attention, experts, shared expert and classifier
      // each add 0.5-1.3% on this small random model); a stale or misplaced activation row gives tens of percent.
      EXPECT_LT(max_diff, 0.03f * max_abs) << "repack " << repack;
    }
    float layout_diff = 0;
    for (size_t i = 0; i < runs[0].size(); ++i) layout_diff = std::max(layout_diff, std::fabs(runs[0][i] - runs[1][i]));
    EXPECT_LE(layout_diff, 1e-4f * max_abs) << "repacked vs the file's layout (float-order noise)";
  }
}

}  // namespace
}  // namespace pagoda
