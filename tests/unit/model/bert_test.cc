// The encoder families (model/arch_bert.cc, arch_jina_bert_v2.cc, arch_nomic_bert.cc, model/bert_model.h) on
// gen-model's tiny GGUFs (synth/random_bert_writer.h):
// - the keys become an encoder's config (LayerNorm epsilon, token types), and a reranker's head is found;
// - the forward pass equals a plain reference written here from the file's tensors (embeddings + LayerNorm, biased
//   Q/K/V, softmax attention over the whole sequence, post-LayerNorms, tanh-GELU FFN; the head's dense + tanh +
//   output), so the kernels' split and the model's bookkeeping change nothing; likewise jina-bert-v2's (ALiBi, Q/K
//   LayerNorms, GEGLU, a one-row head) and nomic-bert's (RoPE, fused QKV, SwiGLU), and a nomic-bert FFN without its
//   gate is refused by name;
// - attention is not causal: changing the last token changes the first token's state; and two sequences in one
//   step see only themselves;
// - a step that would chunk a sequence (context past the step's rows) stops the process (an engine bug), never
//   computes a wrong state.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "model/bert_model.h"
#include "model/registry.h"
#include "model/tensor_set.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_bert_writer.h"

namespace pagoda {
namespace {

using Vec = std::vector<float>;

class BertTest : public testing_support::TempDirTest {
 protected:
  std::unique_ptr<format::GgufFile> write(const std::string& shape_name, format::GgmlType type = format::GgmlType::kF32) {
    std::optional<synth::ModelShape> shape = synth::find_model_shape(shape_name);
    EXPECT_TRUE(shape.has_value());
    synth::RandomModelOptions o{*shape, type, 5, path(shape_name + ".gguf")};
    const Status written = synth::write_random_bert_model(o);
    EXPECT_TRUE(written.ok()) << written.message();
    auto file = format::GgufFile::open(o.output_path);
    EXPECT_TRUE(file.ok()) << file.error();
    return std::make_unique<format::GgufFile>(std::move(*file));
  }

  static std::unique_ptr<Model> model(const format::GgufFile& f) {
    auto m = create_model(f, kernels::best_kernels());
    EXPECT_TRUE(m.ok()) << m.error();
    return m.ok() ? std::move(*m) : nullptr;
  }

  // The hidden rows of `seqs`, all in one step.
  static std::vector<std::vector<Vec>> run(const Model& m, const std::vector<std::vector<TokenId>>& seqs) {
    std::vector<TokenId> tokens;
    std::vector<Pos> positions;
    std::vector<int32_t> starts = {0}, context_lens;
    for (const auto& s : seqs) {
      for (size_t i = 0; i < s.size(); ++i) {
        tokens.push_back(s[i]);
        positions.push_back(Pos(i));
      }
      starts.push_back(int32_t(tokens.size()));
      context_lens.push_back(int32_t(s.size()));
    }
    const int32_t n = int32_t(tokens.size());
    std::vector<int32_t> slots(static_cast<size_t>(n)), rows(static_cast<size_t>(n));
    std::iota(slots.begin(), slots.end(), 0);
    std::iota(rows.begin(), rows.end(), 0);
    const int32_t num_blocks = (n + 15) / 16;
    std::vector<BlockId> table(size_t(num_blocks) * seqs.size(), 0);
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), num_blocks, 16);
    Workspace ws(m.config(), n, n, 1, 2, n);
    BatchView batch;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.slot_ids = slots;
    batch.seq_starts = starts;
    batch.context_lens = context_lens;
    batch.block_tables = BlockTableView{table.data(), int32_t(seqs.size()), num_blocks};
    batch.hidden_rows = rows;
    const LogitsView out = m.forward(batch, kv.view(), ws, pool);
    std::vector<std::vector<Vec>> result(seqs.size());
    for (size_t s = 0; s < seqs.size(); ++s)
      for (int32_t r = starts[s]; r < starts[s + 1]; ++r)
        result[s].emplace_back(out.hidden_row(r).begin(), out.hidden_row(r).end());
    return result;
  }

  // The plain reference, from the f32 file's tensors, for each family's differences (optional tensors read where the
  // file has them).
  struct Reference {
    const format::GgufFile& f;
    int64_t dim, hidden, heads;
    float eps;
    std::string arch = "bert";
    double rope_theta = 10000.0;

    bool has(const std::string& name) const { return f.find_tensor(name) != nullptr; }
    Vec tensor(const std::string& name) const {
      const format::GgufTensorInfo* t = f.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      if (t == nullptr) return {};
      int64_t n = 1;
      for (int64_t d : t->dims) n *= d;
      const float* p = static_cast<const float*>(t->data);
      return Vec(p, p + n);
    }
    // y[o] = sum_i W[o][i] x[i] (+ b[o] where the file has b) for a GGUF matrix [in, out].
    Vec linear(const std::string& w, const std::string& b, const Vec& x) const {
      const Vec W = tensor(w), B = has(b) ? tensor(b) : Vec();
      const int64_t in = int64_t(x.size()), out = int64_t(W.size()) / in;
      Vec y(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) {
        double s = 0.0;
        for (int64_t i = 0; i < in; ++i) s += double(W[size_t(o * in + i)]) * x[size_t(i)];
        y[size_t(o)] = float(s) + (B.empty() ? 0.0f : B[size_t(o)]);
      }
      return y;
    }
    Vec layer_norm(Vec x, const std::string& stem) const {
      const Vec w = tensor(stem + ".weight"), b = tensor(stem + ".bias");
      double mean = 0.0, var = 0.0;
      for (float v : x) mean += v;
      mean /= double(x.size());
      for (float v : x) var += (v - mean) * (v - mean);
      var /= double(x.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = float((x[i] - mean) / std::sqrt(var + eps)) * w[i] + b[i];
      return x;
    }
    static float gelu(float u) { return 0.5f * u * (1.0f + std::tanh(0.7978845608f * (u + 0.044715f * u * u * u))); }
    // NeoX RoPE of every head of a row at position p.
    void rope(Vec& x, int64_t p) const {
      const int64_t hd = dim / heads, half = hd / 2;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const double angle = double(p) * std::pow(rope_theta, -2.0 * double(i) / double(hd));
          float& a = x[size_t(h * hd + i)];
          float& b = x[size_t(h * hd + i + half)];
          const double ra = a * std::cos(angle) - b * std::sin(angle), rb = a * std::sin(angle) + b * std::cos(angle);
          a = float(ra);
          b = float(rb);
        }
    }
    // ALiBi's slope of head h (the ALiBi paper's geometric sequence over the largest power of two of the heads, then
    // the odd powers of the next one's for the rest), maximum bias 8.
    double alibi_slope(int64_t h) const {
      int64_t n = 1;
      while (n * 2 <= heads) n *= 2;
      if (h < n) return std::pow(2.0, -8.0 * double(h + 1) / double(n));
      return std::pow(2.0, -4.0 * double(2 * (h - n) + 1) / double(n));
    }
    std::vector<Vec> forward(const std::vector<TokenId>& tokens, int32_t num_layers) const {
      const Vec embd = tensor("token_embd.weight"), types = tensor("token_types.weight");
      const Vec pos = has("position_embd.weight") ? tensor("position_embd.weight") : Vec();
      std::vector<Vec> x;
      for (size_t t = 0; t < tokens.size(); ++t) {
        Vec row(static_cast<size_t>(dim));
        for (int64_t i = 0; i < dim; ++i)
          row[size_t(i)] = embd[size_t(tokens[t] * dim + i)] +
                           (pos.empty() ? 0.0f : pos[size_t(int64_t(t) * dim + i)]) + types[size_t(i)];
        x.push_back(layer_norm(row, "token_embd_norm"));
      }
      const int64_t hd = dim / heads, n = int64_t(x.size());
      for (int32_t l = 0; l < num_layers; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        std::vector<Vec> q, k, v;
        for (int64_t t = 0; t < n; ++t) {
          const Vec& row = x[size_t(t)];
          if (has(b + "attn_qkv.weight")) {
            const Vec qkv = linear(b + "attn_qkv.weight", b + "attn_qkv.bias", row);
            q.emplace_back(qkv.begin(), qkv.begin() + dim);
            k.emplace_back(qkv.begin() + dim, qkv.begin() + 2 * dim);
            v.emplace_back(qkv.begin() + 2 * dim, qkv.end());
          } else {
            q.push_back(linear(b + "attn_q.weight", b + "attn_q.bias", row));
            k.push_back(linear(b + "attn_k.weight", b + "attn_k.bias", row));
            v.push_back(linear(b + "attn_v.weight", b + "attn_v.bias", row));
          }
          if (has(b + "attn_q_norm.weight")) q.back() = layer_norm(q.back(), b + "attn_q_norm");
          if (has(b + "attn_k_norm.weight")) k.back() = layer_norm(k.back(), b + "attn_k_norm");
          if (arch == "nomic-bert") {
            rope(q.back(), t);
            rope(k.back(), t);
          }
        }
        for (int64_t t = 0; t < n; ++t) {
          Vec att(size_t(dim), 0.0f);
          for (int64_t h = 0; h < heads; ++h) {
            Vec p(static_cast<size_t>(n));
            double mx = -1e30, sum = 0.0;
            for (int64_t j = 0; j < n; ++j) {
              double s = 0.0;
              for (int64_t i = 0; i < hd; ++i) s += double(q[t][size_t(h * hd + i)]) * k[j][size_t(h * hd + i)];
              s /= std::sqrt(double(hd));
              if (arch == "jina-bert-v2") s -= alibi_slope(h) * double(std::abs(t - j));
              p[size_t(j)] = float(s);
              mx = std::max(mx, double(p[size_t(j)]));
            }
            for (float& e : p) sum += (e = float(std::exp(e - mx)));
            for (int64_t j = 0; j < n; ++j)
              for (int64_t i = 0; i < hd; ++i) att[size_t(h * hd + i)] += float(p[size_t(j)] / sum) * v[j][size_t(h * hd + i)];
          }
          Vec o = linear(b + "attn_output.weight", b + "attn_output.bias", att);
          for (int64_t i = 0; i < dim; ++i) o[size_t(i)] += x[t][size_t(i)];
          Vec mid = layer_norm(o, b + "attn_output_norm");
          if (has(b + "attn_norm_2.weight")) {
            for (int64_t i = 0; i < dim; ++i) mid[size_t(i)] += x[t][size_t(i)];
            mid = layer_norm(mid, b + "attn_norm_2");
          }
          Vec act;
          if (has(b + "ffn_gate.weight")) {  // nomic-bert: SwiGLU
            act = linear(b + "ffn_gate.weight", b + "ffn_gate.bias", mid);
            const Vec up = linear(b + "ffn_up.weight", b + "ffn_up.bias", mid);
            for (size_t i = 0; i < act.size(); ++i) act[i] = act[i] / (1.0f + std::exp(-act[i])) * up[i];
          } else if (arch == "jina-bert-v2") {  // GEGLU: the gate is ffn_up's first half
            const Vec both = linear(b + "ffn_up.weight", b + "ffn_up.bias", mid);
            act.assign(both.begin(), both.begin() + hidden);
            for (int64_t i = 0; i < hidden; ++i) act[size_t(i)] = gelu(act[size_t(i)]) * both[size_t(hidden + i)];
          } else {
            act = linear(b + "ffn_up.weight", b + "ffn_up.bias", mid);
            for (float& u : act) u = gelu(u);
          }
          Vec down = linear(b + "ffn_down.weight", b + "ffn_down.bias", act);
          for (int64_t i = 0; i < dim; ++i) down[size_t(i)] += mid[size_t(i)];
          x[t] = layer_norm(down, b + "layer_output_norm");
        }
      }
      return x;
    }
    // The head: tanh of cls, then cls.output where the file has it (jina-reranker-v1: cls's one row alone).
    float score(const Vec& cls_row) const {
      Vec h = linear("cls.weight", "cls.bias", cls_row);
      for (float& e : h) e = std::tanh(e);
      if (!has("cls.output.weight")) return h[0];
      return linear("cls.output.weight", "cls.output.bias", h)[0];
    }
  };

  static float max_diff(const Vec& a, const Vec& b) {
    EXPECT_EQ(a.size(), b.size());
    float m = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }
};

TEST_F(BertTest, KeysMakeAnEncoderAndTheRerankerHasAHead) {
  auto f = write("tiny-bert-reranker");
  auto c = model_config_from_gguf(*f);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->encoder);
  EXPECT_EQ(c->num_token_types, 2);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-12f);
  EXPECT_EQ(c->dim, 64);
  EXPECT_EQ(c->head_dim, 16);
  auto m = model(*f);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_rank_outputs(), 1);

  auto plain = write("tiny-bert");
  auto pm = model(*plain);
  ASSERT_NE(pm, nullptr);
  EXPECT_EQ(pm->num_rank_outputs(), 0);
  EXPECT_EQ(f->get_u32("bert.pooling_type").value(), 4u);
  EXPECT_EQ(plain->get_u32("bert.pooling_type").value(), 1u);
}

TEST_F(BertTest, ForwardAndHeadEqualAPlainReference) {
  auto f = write("tiny-bert-reranker");
  auto m = model(*f);
  ASSERT_NE(m, nullptr);
  const std::vector<TokenId> tokens = {2, 60, 71, 90, 3, 95, 66, 77, 120, 3};
  const Reference ref{*f, 64, 128, 4, 1e-12f};
  const std::vector<Vec> want = ref.forward(tokens, 2);
  const std::vector<Vec> got = run(*m, {tokens})[0];
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < got.size(); ++t) EXPECT_LT(max_diff(got[t], want[t]), 2e-4f) << "token " << t;
  float score = 0.0f;
  m->rank(got[0], std::span<float>(&score, 1));
  EXPECT_NEAR(score, ref.score(want[0]), 1e-4f);
}

// jina-bert-v2 (ALiBi over 6 heads, Q/K LayerNorms, the second attention LayerNorm, GEGLU, a one-row head) and
// nomic-bert (NeoX RoPE, fused QKV, SwiGLU without biases) against the same reference.
TEST_F(BertTest, JinaAndNomicForwardsEqualAPlainReference) {
  {
    auto f = write("tiny-jina-bert-reranker");
    auto c = model_config_from_gguf(*f);
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_TRUE(c->encoder);
    EXPECT_EQ(c->architecture, "jina-bert-v2");
    auto m = model(*f);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->num_rank_outputs(), 1);
    const std::vector<TokenId> tokens = {2, 60, 71, 90, 3, 95, 66, 77, 120, 3};
    const Reference ref{*f, 96, 128, 6, 1e-12f, "jina-bert-v2"};
    const std::vector<Vec> want = ref.forward(tokens, 2);
    const std::vector<Vec> got = run(*m, {tokens})[0];
    ASSERT_EQ(got.size(), want.size());
    for (size_t t = 0; t < got.size(); ++t) EXPECT_LT(max_diff(got[t], want[t]), 2e-4f) << "token " << t;
    float score = 0.0f;
    m->rank(got[0], std::span<float>(&score, 1));
    EXPECT_NEAR(score, ref.score(want[0]), 1e-4f);
  }
  for (const char* shape : {"tiny-jina-bert", "tiny-nomic-bert"}) {
    auto f = write(shape);
    auto m = model(*f);
    ASSERT_NE(m, nullptr) << shape;
    EXPECT_EQ(m->num_rank_outputs(), 0);
    const std::string arch = std::string(shape) == "tiny-jina-bert" ? "jina-bert-v2" : "nomic-bert";
    const std::vector<TokenId> tokens = {2, 60, 71, 90, 3, 95, 66, 77, 120, 3, 61, 70};
    const Reference ref{*f, 64, 128, 4, 1e-12f, arch, 1000.0};
    const std::vector<Vec> want = ref.forward(tokens, 2);
    const std::vector<Vec> got = run(*m, {tokens})[0];
    ASSERT_EQ(got.size(), want.size());
    for (size_t t = 0; t < got.size(); ++t) EXPECT_LT(max_diff(got[t], want[t]), 2e-4f) << shape << " token " << t;
  }
}

// A nomic-bert file without its FFN gate is refused by name.
TEST_F(BertTest, NomicBertWithoutAGateIsRefused) {
  auto f = write("tiny-nomic-bert");
  TensorSet tensors = tensor_set_from_gguf(*f);
  auto c = model_config_from_gguf(*f);
  ASSERT_TRUE(c.ok()) << c.error();
  tensors.tensors.erase("blk.1.ffn_gate.weight");
  auto m = create_model(*c, tensors, kernels::best_kernels(), ModelOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("blk.1.ffn_gate.weight"), std::string::npos) << m.error();
}

TEST_F(BertTest, AttentionIsNotCausalAndSequencesStayApart) {
  auto f = write("tiny-bert");
  auto m = model(*f);
  ASSERT_NE(m, nullptr);
  const std::vector<TokenId> a = {2, 60, 71, 90, 3}, b = {2, 60, 71, 91, 3}, c = {2, 80, 3};
  const auto alone_a = run(*m, {a})[0], alone_b = run(*m, {b})[0];
  // The first token sees the fourth: a change there moves it.
  EXPECT_GT(max_diff(alone_a[0], alone_b[0]), 1e-3f);
  // Batched with another sequence, each row is what it is alone.
  const auto both = run(*m, {c, a});
  const auto alone_c = run(*m, {c})[0];
  for (size_t t = 0; t < a.size(); ++t) EXPECT_LT(max_diff(both[1][t], alone_a[t]), 1e-5f);
  for (size_t t = 0; t < c.size(); ++t) EXPECT_LT(max_diff(both[0][t], alone_c[t]), 1e-5f);
}

TEST_F(BertTest, AChunkedSequenceIsRefused) {
  auto f = write("tiny-bert");
  auto m = model(*f);
  ASSERT_NE(m, nullptr);
  const std::vector<TokenId> tokens = {60, 71};
  const std::vector<Pos> positions = {3, 4};
  const std::vector<int32_t> slots = {3, 4}, starts = {0, 2}, context_lens = {5}, rows = {0, 1};
  const std::vector<BlockId> table = {0};
  ThreadPool pool(1);
  KvStorage kv(m->config().kv_shape(), 1, 16);
  Workspace ws(m->config(), 8, 16, 1, 1, 8);
  BatchView batch;
  batch.tokens = tokens;
  batch.positions = positions;
  batch.slot_ids = slots;
  batch.seq_starts = starts;
  batch.context_lens = context_lens;
  batch.block_tables = BlockTableView{table.data(), 1, 1};
  batch.hidden_rows = rows;
  EXPECT_DEATH(m->forward(batch, kv.view(), ws, pool), "whole in one step");
}

TEST_F(BertTest, OptionsItHasNoVariantOfAreRefusedNotIgnored) {
  auto f = write("tiny-bert");
  for (int which = 0; which < 3; ++which) {
    ModelOptions options;
    if (which == 0) options.fusion = false;
    if (which == 1) options.attention = AttentionKind::kNaive;
    if (which == 2) options.repack_weights = false;
    auto m = create_model(*f, kernels::best_kernels(), options);
    ASSERT_FALSE(m.ok()) << which;
    EXPECT_NE(m.error().find("do not apply"), std::string::npos) << m.error();
  }
  EXPECT_TRUE(create_model(*f, kernels::best_kernels(), ModelOptions{}).ok());
}

}  // namespace
}  // namespace pagoda
