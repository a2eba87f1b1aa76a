// BertModel: the forward pass of an encoder (the bert, jina-bert-v2 and nomic-bert families): token (+ BERT's
// position) + token-type embeddings and their LayerNorm, then per block Q/K/V with biases (jina-bert-v2: LayerNorms of
// Q and K; nomic-bert: RoPE of Q and K), attention over every token of the sequence (no causal mask; jina-bert-v2:
// ALiBi's distance bias), the output projection, residual add and LayerNorm (jina-bert-v2 may add a second), a GELU
// FFN (or a gated one: GEGLU, SwiGLU), residual add and LayerNorm (post-LN); and a cross-encoder's classification
// head (rank). Its attention reads the K/V of the step's own rows, never the KV
// cache: the engine computes an encoder's sequence whole in one step (ModelConfig::encoder), which forward checks.
// No LM head: a step asks it for hidden rows (pooling), never for logits. Owns its weight views and a reference to
// the process's kernel table; no threads, no state.
#pragma once

#include "kernels/kernels.h"
#include "model/bert_weights.h"
#include "model/model.h"

namespace pagoda {

class BertModel final : public Model {
 public:
  BertModel(ModelConfig config, BertWeights weights, const kernels::KernelTable& kernels);

  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws, ThreadPool& pool) const override;
  const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv, Workspace& ws,
                              ThreadPool& pool) const override;
  LogitsView forward_logits(const BatchView& batch, Workspace& ws, ThreadPool& pool) const override;
  const ModelConfig& config() const override { return config_; }
  int32_t num_rank_outputs() const override { return weights_.num_rank_outputs(); }
  void rank(std::span<const float> pooled, std::span<float> out) const override;

 private:
  // y = W x (+ bias) for `num_tokens` rows of x, split over the pool (by rows for one token, else by tokens).
  void linear(const WeightView& w, const std::vector<float>& bias, const float* x, float* y, int32_t num_tokens,
              ThreadPool& pool) const;
  // Rows of x: x = LayerNorm(x + add) with `weight` and `bias` (add null: x alone).
  void add_layer_norm(float* x, const float* add, const std::vector<float>& weight, const std::vector<float>& bias,
                      int32_t num_tokens, ThreadPool& pool) const;
  // ws.xb = softmax(q k^T / sqrt(head_dim)) v per sequence and head, over every token of the sequence.
  void attention(const BatchView& batch, Workspace& ws, ThreadPool& pool) const;
  void embed(const BatchView& batch, Workspace& ws, ThreadPool& pool) const;

  ModelConfig config_;
  BertWeights weights_;
  const kernels::KernelTable& kernels_;
  std::vector<float> ones_;  // [hidden_dim]: GELU through gelu_mul's second factor
  std::vector<float> alibi_slopes_;  // [num_heads] under ALiBi; empty otherwise
};

}  // namespace pagoda
