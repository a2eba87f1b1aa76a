// LlamaModel: the forward pass of the Llama-block families (model/architecture.h): RMSNorm, RoPE on adjacent pairs
// or NeoX halves, grouped-query attention, SwiGLU or GeGLU; and what ModelConfig switches on for a family: Qwen2's
// QKV bias and Qwen3/Gemma 3's Q/K norm (when the weights have them), Gemma's post-norms, scaled embeddings,
// sliding-window layers and soft-capping, Granite's multipliers, Phi-3's LongRoPE, a mixture of experts in place of
// the dense FFN, with an optional (gated) shared expert (moe_ffn.cc), LFM2's short-convolution layers in place of
// attention (their window per sequence in the KV view's recurrent state), Qwen3.5's gated DeltaNet layers beside
// gated attention (delta_net_block.cc), DeepSeek-V2's multi-head latent attention (mla_attention.cc). f32
// activations over weights that stay in the
// GGUF mapping (or their repacked copies). Owns its ModelWeights views and a reference to the process's kernel table.
#pragma once

#include <span>
#include <vector>

#include "kernels/kernels.h"
#include "model/model.h"
#include "model/model_options.h"
#include "model/model_weights.h"
#include "model/tensor_parallel_shard.h"

namespace pagoda {

class LlamaModel final : public Model {
 public:
  LlamaModel(ModelConfig config, ModelWeights weights, const kernels::KernelTable& kernels,
             const ModelOptions& options = {});
  // One rank's shard of a tensor-parallel model: `config` and `weights` are the shard's
  // (shard_model_config / shard_model_weights); options.tensor_parallel is the group.
  LlamaModel(ModelConfig config, ModelWeights weights, const kernels::KernelTable& kernels, const ModelOptions& options,
             TensorParallelShard shard);

  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws, ThreadPool& pool) const override;
  const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv, Workspace& ws,
                              ThreadPool& pool) const override;
  LogitsView forward_logits(const BatchView& batch, Workspace& ws, ThreadPool& pool) const override;
  // The shape this process computes: a shard's heads and FFN units under tensor parallelism, whose KV cache and
  // workspace are sized from it; the vocabulary is always whole.
  const ModelConfig& config() const override { return config_; }
  const ModelOptions& options() const { return options_; }
  // A decoder reranker (Qwen3-Reranker, ModelWeights::cls_out): the last token's final hidden state through
  // cls.output, then a softmax over its outputs, as llama.cpp scores a qwen3 file with rank pooling.
  int32_t num_rank_outputs() const override { return int32_t(weights_.cls_out.num_rows); }
  bool rank_reads_last_token() const override { return true; }
  void rank(std::span<const float> pooled, std::span<float> out) const override;

 private:
  static constexpr int64_t kRowGrain = 16;   // output rows: a thread's share of a row split is a multiple
  static constexpr int64_t kTokenGrain = 4;  // the kernels reuse each weight row across 4 tokens
  static_assert(kRowGrain % 16 == 0, "row splits must start at groups of 8 or 16 rows (model/weight_repack.h)");

  // The matmul entry points of a weight dtype: on f32 activations (any dtype), and on activations already quantized
  // to Q8_0 (q8_input) or to q8_K (q8k_input: the K-quants and IQ4_XS); a dtype has at most one of the two, null
  // otherwise.
  struct MatmulKernels {
    kernels::MatmulFn f32_input = nullptr;
    kernels::MatmulQ8Fn q8_input = nullptr;
    kernels::MatmulQ8KFn q8k_input = nullptr;
  };
  MatmulKernels matmul_kernels(DType dtype) const;
  bool reads_q8(DType dtype) const { return matmul_kernels(dtype).q8_input != nullptr; }
  bool reads_q8_K(DType dtype) const { return matmul_kernels(dtype).q8k_input != nullptr; }
  bool reads_quantized(DType dtype) const { return reads_q8(dtype) || reads_q8_K(dtype); }
  // An input's quantized rows, each form set where the caller made it: Q8_0 (num_cols / 32 blocks a row) and q8_K
  // (num_cols / 256). A weight whose form is missing reads the f32 rows.
  struct QuantizedInput {
    const quant::BlockQ8_0* q8_0 = nullptr;
    const quant::BlockQ8_K* q8_K = nullptr;
  };
  // Whether layer `lw` runs the fused ops: fusion on, no linear observer, no AWQ input scales.
  bool fuses(const LayerWeights& lw) const;

  // y = W x for `num_tokens` rows of x, split over the pool.
  void linear(const WeightView& w, const float* x, float* y, int32_t num_tokens, Workspace& ws, ThreadPool& pool) const;

  // The fused ops (llama_fused_ops.cc), run when options_.fusion is set; each gives its unfused sequence's bits.
  // One weight of norm_and_project and where its outputs go: f32 [num_tokens, w->num_rows].
  struct FusedProjection {
    const WeightView* w;
    float* y;
  };
  // Each part's y = W rmsnorm(x, norm) for every token, as one pool job over the parts' rows laid end to end: the
  // attention's Q, K and V (and gated attention's Q with its gate), a gated DeltaNet layer's input projections.
  void norm_and_project(const std::vector<float>& norm, std::span<const FusedProjection> parts, int32_t num_tokens,
                        Workspace& ws, ThreadPool& pool) const;
  // q, k, v = W_{q,k,v} rmsnorm(x, attn_norm) for every token, as one pool job.
  void qkv_fused(const LayerWeights& lw, int32_t num_tokens, Workspace& ws, ThreadPool& pool) const;
  // gate = silu(W_gate h) * (W_up h) with h = rmsnorm(x, ffn_norm), as one pool job; also writes gate's Q8_0
  // blocks to ws.hq when w_down is quantized.
  void gate_up_fused(const LayerWeights& lw, int32_t num_tokens, Workspace& ws, ThreadPool& pool) const;
  // x += W h (the residual add) as one pool job, each thread adding the slice of W h it computed. hq: h quantized
  // in the forms the caller has (none: quantized here into ws.xq or ws.xqk as w reads it).
  void linear_add_fused(const WeightView& w, const float* h, QuantizedInput hq, int32_t num_tokens, Workspace& ws,
                        ThreadPool& pool) const;
  // Token rows [t_begin, t_end) of ws.x normalized by `weight`: f32 into ws.xb when `to_f32` or `to_q8k`, Q8_0 into
  // ws.xq when `to_q8` (in one pass when only that), q8_K into ws.xqk when `to_q8k`.
  void norm_rows(const std::vector<float>& weight, int32_t t_begin, int32_t t_end, bool to_f32, bool to_q8,
                 bool to_q8k, Workspace& ws) const;
  // y[t][o] = W[o] . x[t] for o in [o_begin, o_end) and t in [t_begin, t_end), y of row stride w.num_rows;
  // from xq's form of the dtype's quantized kernel when there is one and xq has it, else from x (f32 rows).
  // The f32 kernels write whole rows, so a slice of the rows takes one token at a time.
  void matmul_rows(const WeightView& w, const float* x, QuantizedInput xq, float* y, int64_t o_begin, int64_t o_end,
                   int32_t t_begin, int32_t t_end) const;
  void embed(TokenId token, float* out) const;
  // forward()'s preconditions on the batch's shape, the KV cache's and the workspace's.
  void check_batch(const BatchView& batch, const KvCacheView& kv, const Workspace& ws) const;
  // Tensor parallel: x[0..n) = the sum of every rank's x (their partial projections, or embedding rows).
  void all_reduce(float* x, int64_t n) const;
  // The residual add of a projection, ws.x[0..n) += w in: fused (linear_add_fused, `in_q8` as it takes it) when
  // `fuse` and the model is whole; otherwise through ws.proj, summed over the ranks first under tensor parallelism.
  // With a post-norm or residual scale (transforms_residual), never fused: the projection is normed and scaled first.
  // A `bias` ([dim], gpt-oss's attn_output.bias) is added to each token's projection before the residual add (never
  // fused either).
  void add_projection(const WeightView& w, const float* in, QuantizedInput in_q8, bool fuse,
                      const std::vector<float>& post_norm, int32_t n, Workspace& ws, ThreadPool& pool,
                      const std::vector<float>& bias = {}) const;
  // Tensor parallel: the classifier's rows of this rank's vocabulary, for `num_rows` rows of ws.final_x; on
  // rank 0 ws.logits then holds every rank's, each row in vocabulary order.
  void tensor_parallel_logits(int32_t num_rows, Workspace& ws, ThreadPool& pool) const;
  bool tensor_parallel() const { return shard_.size > 1; }
  // Qwen2's bias on Q, K and V, then Qwen3's per-head RMSNorm of Q and K (each only when the layer has it), on
  // the projections of all `n` tokens, before RoPE.
  void add_qkv_bias_and_norm(const LayerWeights& lw, int32_t layer, int32_t n, Workspace& ws) const;
  // Gemma 4's per-layer embeddings: every layer's input for the batch's tokens, then one layer's addition.
  void per_layer_inputs(const BatchView& batch, Workspace& ws, ThreadPool& pool) const;
  void add_per_layer_input(const LayerWeights& lw, int32_t layer, int32_t n, Workspace& ws, ThreadPool& pool) const;
  // ws.xb = each token's RMSNorm of ws.x by `weight`, or ws.x as is for a family without pre-norms.
  void pre_norm(const std::vector<float>& weight, int32_t n, Workspace& ws) const;
  // Llama 4's attention temperature: the query row of a token at `position` times its factor.
  void scale_query_temperature(Pos position, float* q) const;
  // Rotates token t's K by RoPE (`cs`, `sn`: its row of the layer's table) and stores K and V at its slot (quantized
  // for an int8 cache); with fusion the rotation happens on the way into the cache instead of in the workspace first.
  void write_kv(const BatchView& batch, const KvCacheView& kv, int32_t layer, int32_t t, const float* cs,
                const float* sn, Workspace& ws) const;
  // The first position token t (at `pos`) attends to in `layer`: past the sliding window on a windowed layer.
  int32_t attention_begin(int32_t layer, int32_t pos) const {
    return config_.is_swa_layer(layer) ? kernels::window_begin(pos + 1, config_.sliding_window) : 0;
  }
  float attention_scale() const;
  // gate = act(gate) * up over n values: SiLU or GELU as the family uses.
  void activation_mul(float* gate, const float* up, int64_t n) const {
    if (config_.activation == FfnActivation::kSwigluOai) {
      kernels_.swiglu_oai_mul(gate, up, n, kSwigluOaiAlpha, kSwigluOaiLimit);
      return;
    }
    (config_.activation == FfnActivation::kGeluTanh ? kernels_.gelu_mul : kernels_.silu_mul)(gate, up, n);
  }
  // The residual add of a block's output in ws.proj when the family transforms it first (Gemma's post-norm,
  // Granite's residual scale): x += scale * rmsnorm(proj, post_norm), per token.
  void add_transformed_residual(const std::vector<float>& post_norm, int32_t n, Workspace& ws) const;
  bool transforms_residual(const std::vector<float>& post_norm) const {
    return !post_norm.empty() || config_.residual_scale != 0.0f;
  }
  // The FFN block of layer `lw` over the n tokens (dense, fused or not, or the experts), with its residual add, then
  // the layer's per-layer input (Gemma 4) and output scale.
  void ffn_block(const LayerWeights& lw, int32_t layer, bool fuse, int32_t n, Workspace& ws, ThreadPool& pool) const;
  // A short-convolution layer (ModelConfig::is_conv_layer) in place of attention: reads and advances each
  // sequence's window in its recurrent-state slot (BatchView::state_slots), then the residual add.
  void short_conv_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                        ThreadPool& pool) const;
  // A gated DeltaNet layer (delta_net_block.cc; ModelConfig::is_delta_net) in place of attention: reads and advances
  // each sequence's convolution window and head matrices in its recurrent-state slot, then the residual add.
  void delta_net_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                       ThreadPool& pool) const;
  // Mixture of experts (moe_ffn.cc): x += sum over each token's chosen experts of weight * expert(rmsnorm(x)), plus the
  // layer's shared expert (times its sigmoid gate) when it has one; Gemma 4's (ModelConfig::moe_beside_dense_ffn):
  // x += rmsnorm(rmsnorm(dense FFN) + rmsnorm(experts' sum)).
  void moe_ffn(const LayerWeights& lw, int32_t n, Workspace& ws, ThreadPool& pool) const;
  // Gemma 4's dense branch beside the experts: ws.moe_dense_out = rmsnorm(w_down(act(w_gate x) * w_up x)) of
  // rmsnorm(x), through ws.xb, ws.gate and ws.up; then the router's input, rmsnorm(x) / sqrt(dim) * scale, in ws.xb.
  void dense_branch_and_router_input(const LayerWeights& lw, int32_t n, Workspace& ws, ThreadPool& pool) const;
  // ws.proj = the shared expert `ex` of the `n` normed rows in ws.xb (and their Q8_0 blocks in ws.xq when it reads
  // them), through ws.gate, ws.up and ws.hq.
  void shared_expert_ffn(const ExpertWeights& ex, int32_t n, Workspace& ws, ThreadPool& pool) const;
  // Each token's top-k experts and their weights from the router logits (ws.router_logits), then the tokens grouped
  // by expert (ws.moe_*): the softmax, top-k and renormalization of llama.cpp's build_moe_ffn.
  // `selection_bias` ([num_experts], DeepSeek's exp_probs_b; empty = none) joins the ranking only.
  void route_tokens(const std::vector<float>& selection_bias, int32_t n, Workspace& ws) const;
  // Group-limited routing (ModelConfig::expert_groups > 1): every expert outside the expert_groups_used groups of
  // highest score (a group's two best values summed) set to -infinity in `selection` ([num_experts]).
  void mask_expert_groups(float* selection) const;
  // A multi-head latent attention layer (mla_attention.cc; ModelConfig::is_mla) with its residual add: the latent
  // and rope key of each token written to the cache as one K row, the queries absorbed into the latent space, the
  // attention over the cache's rows as one KV head, each head's latent output through its attn_v_b, then attn_output.
  void mla_attention_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                           ThreadPool& pool) const;
  // options_.attention picks one: the paged flash kernel, or the naive two-pass reference.
  void attention(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws, ThreadPool& pool) const;
  void attention_flash(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                       ThreadPool& pool) const;
  void attention_naive(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                       ThreadPool& pool) const;

  ModelConfig config_;
  ModelWeights weights_;
  const kernels::KernelTable& kernels_;
  ModelOptions options_;
  TensorParallelShard shard_;  // size 1: the whole model
  // ones [max(max_head_dim, dim)]: the weight of a norm that has none (Gemma 4's V and router input)
  std::vector<float> unit_weights_;
};

}  // namespace pagoda
