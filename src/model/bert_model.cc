// The encoder forward pass (llama.cpp's bert, jina-bert-v2 and nomic-bert graphs, computed directly over the step's
// rows).
#include "model/bert_model.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "model/rope_tables.h"

namespace pagoda {

namespace {

// ggml's ALiBi slopes (ggml_soft_max_ext with max_bias): heads below the largest power of two n <= num_heads get
// m0^(h + 1), m0 = 2^(-max_bias / n); the rest m1^(2 (h - n) + 1), m1 = 2^(-max_bias / 2 / n).
std::vector<float> alibi_slopes(int32_t num_heads, float max_bias) {
  std::vector<float> slopes(size_t(num_heads), 0.0f);
  if (max_bias <= 0.0f) return slopes;
  const uint32_t n = 1u << uint32_t(std::floor(std::log2(double(num_heads))));
  const float m0 = std::pow(2.0f, -max_bias / float(n));
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / float(n));
  for (int32_t h = 0; h < num_heads; ++h)
    slopes[size_t(h)] = uint32_t(h) < n ? std::pow(m0, float(h + 1)) : std::pow(m1, float(2 * (h - int32_t(n)) + 1));
  return slopes;
}

}  // namespace

BertModel::BertModel(ModelConfig config, BertWeights weights, const kernels::KernelTable& kernels)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      kernels_(kernels),
      ones_(size_t(config_.hidden_dim), 1.0f),
      alibi_slopes_(weights_.positions == EncoderPositions::kAlibi
                        ? alibi_slopes(config_.num_heads, weights_.alibi_max_bias)
                        : std::vector<float>()) {}

void BertModel::linear(const WeightView& w, const std::vector<float>& bias, const float* x, float* y,
                       int32_t num_tokens, ThreadPool& pool) const {
  const kernels::MatmulFn fn = kernels_.matmul_for(w.dtype).f32;
  PAGODA_CHECK(fn != nullptr, "no matmul for {} weights", dtype_name(w.dtype));
  const int64_t in = w.num_cols, out = w.num_rows;
  if (num_tokens == 1) {
    pool.parallel_for(out, 16, [&](int64_t begin, int64_t end) { fn(w.row(begin), x, y + begin, end - begin, in, 1); });
  } else {
    pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
      // The kernel writes rows of stride `out` for its tokens: a token's result never depends on its neighbours.
      fn(w.data, x + begin * in, y + begin * out, out, in, end - begin);
    });
  }
  if (!bias.empty())
    for (int32_t t = 0; t < num_tokens; ++t)
      for (int64_t o = 0; o < out; ++o) y[t * out + o] += bias[size_t(o)];
}

void BertModel::add_layer_norm(float* x, const float* add, const std::vector<float>& weight,
                               const std::vector<float>& bias, int32_t num_tokens, ThreadPool& pool) const {
  const int64_t dim = config_.dim;
  const float eps = config_.rms_eps;
  pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* row = x + t * dim;
      if (add != nullptr)
        for (int64_t i = 0; i < dim; ++i) row[i] += add[t * dim + i];
      double sum = 0.0;
      for (int64_t i = 0; i < dim; ++i) sum += row[i];
      const float mean = float(sum / double(dim));
      double sq = 0.0;
      for (int64_t i = 0; i < dim; ++i) {
        const float d = row[i] - mean;
        row[i] = d;
        sq += double(d) * d;
      }
      const float scale = 1.0f / std::sqrt(float(sq / double(dim)) + eps);
      for (int64_t i = 0; i < dim; ++i) row[i] = row[i] * scale * weight[size_t(i)] + bias[size_t(i)];
    }
  });
}

void BertModel::embed(const BatchView& batch, Workspace& ws, ThreadPool& pool) const {
  const int64_t dim = config_.dim;
  const WeightView& types = weights_.token_types;
  pool.parallel_for(batch.num_tokens(), 1, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(dim));
    for (int64_t t = begin; t < end; ++t) {
      float* x = ws.x.data() + t * dim;
      dequantize_row(weights_.token_embd.dtype, weights_.token_embd.row(batch.tokens[size_t(t)]), x, dim);
      if (weights_.position_embd.data != nullptr) {
        dequantize_row(weights_.position_embd.dtype, weights_.position_embd.row(batch.positions[size_t(t)]), row.data(),
                       dim);
        for (int64_t i = 0; i < dim; ++i) x[i] += row[size_t(i)];
      }
      // Every token is of type 0 (sentence A), as llama.cpp runs it: a pair is told apart by its SEP token only.
      if (types.data != nullptr) {
        dequantize_row(types.dtype, types.row(0), row.data(), dim);
        for (int64_t i = 0; i < dim; ++i) x[i] += row[size_t(i)];
      }
    }
  });
  add_layer_norm(ws.x.data(), nullptr, weights_.embd_norm, weights_.embd_norm_b, batch.num_tokens(), pool);
}

void BertModel::attention(const BatchView& batch, Workspace& ws, ThreadPool& pool) const {
  const int32_t heads = config_.num_heads, hd = config_.head_dim, dim = config_.dim;
  const int64_t items = int64_t(batch.num_tokens()) * heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  const int32_t threads = pool.num_threads();
  pool.run([&](int32_t thread) {
    float* scores = ws.scores.data() + int64_t(thread) * ws.max_context;
    for (int64_t item = items * thread / threads; item < items * (thread + 1) / threads; ++item) {
      const int32_t t = int32_t(item / heads), h = int32_t(item % heads);
      // The sequence of token t: the last start at or before it.
      const auto it = std::upper_bound(batch.seq_starts.begin(), batch.seq_starts.end(), t);
      const int32_t first = *(it - 1), last = *it;
      const float* q = ws.q.data() + int64_t(t) * dim + int64_t(h) * hd;
      for (int32_t j = first; j < last; ++j)
        scores[j - first] = kernels_.dot(q, ws.k.data() + int64_t(j) * dim + int64_t(h) * hd, hd) * scale;
      if (!alibi_slopes_.empty()) {
        // ALiBi: the mask llama.cpp builds, -|p_t - p_j|, times the head's slope, added to the scaled score.
        const float slope = alibi_slopes_[size_t(h)];
        const Pos p = batch.positions[size_t(t)];
        for (int32_t j = first; j < last; ++j)
          scores[j - first] += slope * -float(std::abs(p - batch.positions[size_t(j)]));
      }
      kernels_.softmax(scores, scores, last - first);
      float* out = ws.xb.data() + int64_t(t) * dim + int64_t(h) * hd;
      std::fill(out, out + hd, 0.0f);
      for (int32_t j = first; j < last; ++j)
        kernels_.axpy(scores[j - first], ws.v.data() + int64_t(j) * dim + int64_t(h) * hd, out, hd);
    }
  });
}

const float* BertModel::forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView&,
                                       Workspace& ws, ThreadPool& pool) const {
  PAGODA_CHECK(hidden_in == nullptr, "an encoder runs as one stage");
  const int32_t n = batch.num_tokens();
  PAGODA_CHECK(n <= ws.max_tokens, "{} tokens in a step sized for {}", n, ws.max_tokens);
  PAGODA_CHECK(pool.num_threads() <= ws.num_threads, "{} threads on a workspace for {}", pool.num_threads(),
               ws.num_threads);
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const int32_t first = batch.seq_starts[size_t(s)], count = batch.seq_starts[size_t(s) + 1] - first;
    PAGODA_CHECK(count > 0 && batch.context_lens[size_t(s)] == count && batch.positions[size_t(first)] == 0,
                 "an encoder computes a sequence whole in one step (sequence {}: {} tokens of a context of {})", s,
                 count, batch.context_lens[size_t(s)]);
    PAGODA_CHECK(count <= ws.max_context && count <= config_.context_length,
                 "a sequence of {} tokens exceeds the encoder's {} positions", count, config_.context_length);
  }
  for (TokenId token : batch.tokens)
    PAGODA_CHECK(token >= 0 && token < config_.vocab_size, "token {} outside the vocabulary", token);
  embed(batch, ws, pool);
  const int32_t hidden = config_.hidden_dim;
  const bool rope = weights_.positions == EncoderPositions::kRope;
  const int32_t half_rope = config_.rope_dim / 2;
  if (rope)
    fill_rope_tables(config_, batch.positions, rope_params(config_, false), ws.rope_context, ws.rope_cos.data(),
                     ws.rope_sin.data());
  for (const BertLayerWeights& lw : weights_.layers) {
    linear(lw.wq, lw.bq, ws.x.data(), ws.q.data(), n, pool);
    linear(lw.wk, lw.bk, ws.x.data(), ws.k.data(), n, pool);
    linear(lw.wv, lw.bv, ws.x.data(), ws.v.data(), n, pool);
    if (!lw.q_norm.empty()) add_layer_norm(ws.q.data(), nullptr, lw.q_norm, lw.q_norm_b, n, pool);
    if (!lw.k_norm.empty()) add_layer_norm(ws.k.data(), nullptr, lw.k_norm, lw.k_norm_b, n, pool);
    if (rope) {
      pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const float* cs = ws.rope_cos.data() + t * half_rope;
          const float* sn = ws.rope_sin.data() + t * half_rope;
          float* q = ws.q.data() + t * config_.dim;
          float* k = ws.k.data() + t * config_.dim;
          kernels_.rope(q, q, config_.num_heads, config_.head_dim, half_rope, cs, sn, config_.rope_neox);
          kernels_.rope(k, k, config_.num_heads, config_.head_dim, half_rope, cs, sn, config_.rope_neox);
        }
      });
    }
    attention(batch, ws, pool);
    linear(lw.wo, lw.bo, ws.xb.data(), ws.proj.data(), n, pool);
    if (!lw.attn_norm_2.empty()) {
      // jina-bert-v2: LayerNorm(LayerNorm(attention + input) + input); xb (attention's output, read) keeps the input.
      std::copy(ws.x.begin(), ws.x.begin() + int64_t(n) * config_.dim, ws.xb.begin());
      add_layer_norm(ws.x.data(), ws.proj.data(), lw.attn_out_norm, lw.attn_out_norm_b, n, pool);
      add_layer_norm(ws.x.data(), ws.xb.data(), lw.attn_norm_2, lw.attn_norm_2_b, n, pool);
    } else {
      add_layer_norm(ws.x.data(), ws.proj.data(), lw.attn_out_norm, lw.attn_out_norm_b, n, pool);
    }
    linear(lw.w_up, lw.b_up, ws.x.data(), ws.up.data(), n, pool);
    float* act = ws.up.data();
    if (lw.w_gate.data != nullptr) {
      // Gated: act(gate x) * (up x), GEGLU or SwiGLU by the family's activation.
      linear(lw.w_gate, lw.b_gate, ws.x.data(), ws.gate.data(), n, pool);
      const bool silu = config_.activation == FfnActivation::kSilu;
      pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          float* g = ws.gate.data() + t * hidden;
          const float* u = ws.up.data() + t * hidden;
          if (silu)
            kernels_.silu_mul(g, u, hidden);
          else
            kernels_.gelu_mul(g, u, hidden);
        }
      });
      act = ws.gate.data();
    } else {
      pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) kernels_.gelu_mul(ws.up.data() + t * hidden, ones_.data(), hidden);
      });
    }
    linear(lw.w_down, lw.b_down, act, ws.proj.data(), n, pool);
    add_layer_norm(ws.x.data(), ws.proj.data(), lw.out_norm, lw.out_norm_b, n, pool);
  }
  return ws.x.data();
}

LogitsView BertModel::forward_logits(const BatchView& batch, Workspace& ws, ThreadPool&) const {
  PAGODA_CHECK(batch.logits_rows.empty(), "an encoder has no LM head: a step asks it for hidden rows only");
  PAGODA_CHECK(int32_t(batch.hidden_rows.size()) <= ws.max_hidden_rows, "{} hidden rows for a workspace of {}",
               batch.hidden_rows.size(), ws.max_hidden_rows);
  const int64_t dim = config_.dim;
  for (size_t r = 0; r < batch.hidden_rows.size(); ++r) {
    const float* src = ws.x.data() + int64_t(batch.hidden_rows[r]) * dim;
    std::copy(src, src + dim, ws.hidden.data() + int64_t(r) * dim);
  }
  LogitsView out;
  out.data = ws.logits.data();
  out.vocab_size = config_.vocab_size;
  out.hidden = ws.hidden.data();
  out.num_hidden_rows = int32_t(batch.hidden_rows.size());
  out.hidden_dim = int32_t(dim);
  return out;
}

LogitsView BertModel::forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws, ThreadPool& pool) const {
  forward_hidden(batch, nullptr, kv, ws, pool);
  return forward_logits(batch, ws, pool);
}

void BertModel::rank(std::span<const float> pooled, std::span<float> out) const {
  PAGODA_CHECK(num_rank_outputs() > 0, "this model has no classification head");
  PAGODA_CHECK(int64_t(pooled.size()) == config_.dim && int32_t(out.size()) == num_rank_outputs(),
               "rank head: {} in, {} out", pooled.size(), out.size());
  std::vector<float> x(pooled.begin(), pooled.end());
  if (weights_.cls.data != nullptr) {
    std::vector<float> y(size_t(weights_.cls.num_rows));
    kernels_.matmul_for(weights_.cls.dtype).f32(weights_.cls.data, x.data(), y.data(), weights_.cls.num_rows,
                                                weights_.cls.num_cols, 1);
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::tanh(y[i] + (weights_.cls_b.empty() ? 0.0f : weights_.cls_b[i]));
    x = std::move(y);
  }
  if (weights_.cls_out.data != nullptr) {
    std::vector<float> y(size_t(weights_.cls_out.num_rows));
    kernels_.matmul_for(weights_.cls_out.dtype).f32(weights_.cls_out.data, x.data(), y.data(),
                                                    weights_.cls_out.num_rows, weights_.cls_out.num_cols, 1);
    for (size_t i = 0; i < y.size(); ++i) y[i] += weights_.cls_out_b.empty() ? 0.0f : weights_.cls_out_b[i];
    x = std::move(y);
  }
  std::copy(x.begin(), x.end(), out.begin());
}

}  // namespace pagoda
