// The bert family (model/arch_bert.cc, model/bert_model.h) on gen-model's tiny BERT GGUFs
// (synth/random_bert_writer.h):
// - the keys become an encoder's config (LayerNorm epsilon, token types), and a reranker's head is found;
// - the forward pass equals a plain reference written here from the file's tensors (embeddings + LayerNorm, biased
//   Q/K/V, softmax attention over the whole sequence, post-LayerNorms, tanh-GELU FFN; the head's dense + tanh +
//   output), so the kernels' split and the model's bookkeeping change nothing;
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

  // The plain reference, from the f32 file's tensors.
  struct Reference {
    const format::GgufFile& f;
    int64_t dim, hidden, heads;
    float eps;

    Vec tensor(const std::string& name) const {
      const format::GgufTensorInfo* t = f.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      int64_t n = 1;
      for (int64_t d : t->dims) n *= d;
      const float* p = static_cast<const float*>(t->data);
      return Vec(p, p + n);
    }
    // y[o] = sum_i W[o][i] x[i] + b[o] for a GGUF matrix [in, out].
    Vec linear(const std::string& w, const std::string& b, const Vec& x) const {
      const Vec W = tensor(w), B = tensor(b);
      const int64_t in = int64_t(x.size()), out = int64_t(B.size());
      Vec y(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) {
        double s = 0.0;
        for (int64_t i = 0; i < in; ++i) s += double(W[size_t(o * in + i)]) * x[size_t(i)];
        y[size_t(o)] = float(s) + B[size_t(o)];
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
    std::vector<Vec> forward(const std::vector<TokenId>& tokens, int32_t num_layers) const {
      const Vec embd = tensor("token_embd.weight"), pos = tensor("position_embd.weight"),
                types = tensor("token_types.weight");
      std::vector<Vec> x;
      for (size_t t = 0; t < tokens.size(); ++t) {
        Vec row(static_cast<size_t>(dim));
        for (int64_t i = 0; i < dim; ++i)
          row[size_t(i)] = embd[size_t(tokens[t] * dim + i)] + pos[size_t(int64_t(t) * dim + i)] + types[size_t(i)];
        x.push_back(layer_norm(row, "token_embd_norm"));
      }
      const int64_t hd = dim / heads, n = int64_t(x.size());
      for (int32_t l = 0; l < num_layers; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        std::vector<Vec> q, k, v;
        for (const Vec& row : x) {
          q.push_back(linear(b + "attn_q.weight", b + "attn_q.bias", row));
          k.push_back(linear(b + "attn_k.weight", b + "attn_k.bias", row));
          v.push_back(linear(b + "attn_v.weight", b + "attn_v.bias", row));
        }
        for (int64_t t = 0; t < n; ++t) {
          Vec att(size_t(dim), 0.0f);
          for (int64_t h = 0; h < heads; ++h) {
            Vec p(static_cast<size_t>(n));
            double mx = -1e30, sum = 0.0;
            for (int64_t j = 0; j < n; ++j) {
              double s = 0.0;
              for (int64_t i = 0; i < hd; ++i) s += double(q[t][size_t(h * hd + i)]) * k[j][size_t(h * hd + i)];
              p[size_t(j)] = float(s / std::sqrt(double(hd)));
              mx = std::max(mx, double(p[size_t(j)]));
            }
            for (float& e : p) sum += (e = float(std::exp(e - mx)));
            for (int64_t j = 0; j < n; ++j)
              for (int64_t i = 0; i < hd; ++i) att[size_t(h * hd + i)] += float(p[size_t(j)] / sum) * v[j][size_t(h * hd + i)];
          }
          Vec o = linear(b + "attn_output.weight", b + "attn_output.bias", att);
          for (int64_t i = 0; i < dim; ++i) o[size_t(i)] += x[t][size_t(i)];
          Vec mid = layer_norm(o, b + "attn_output_norm");
          Vec up = linear(b + "ffn_up.weight", b + "ffn_up.bias", mid);
          for (float& u : up) u = 0.5f * u * (1.0f + std::tanh(0.7978845608f * (u + 0.044715f * u * u * u)));
          Vec down = linear(b + "ffn_down.weight", b + "ffn_down.bias", up);
          for (int64_t i = 0; i < dim; ++i) down[size_t(i)] += mid[size_t(i)];
          x[t] = layer_norm(down, b + "layer_output_norm");
        }
      }
      return x;
    }
    float score(const Vec& cls_row) const {
      Vec h = linear("cls.weight", "cls.bias", cls_row);
      for (float& e : h) e = std::tanh(e);
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
