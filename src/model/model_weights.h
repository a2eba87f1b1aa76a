// ModelWeights: views of a Llama-family model's tensors inside the GGUF mapping (no copy), checked against
// ModelConfig's shapes at load. 1-D norm weights (and a shared expert's gate vector) are small and are converted
// to owned f32 vectors so every kernel gets f32 whatever dtype the file stores them in.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/types.h"
#include "format/gguf_reader.h"
#include "model/model_config.h"
#include "model/tensor_set.h"

namespace pagoda {

// A row-major matrix [num_rows, num_cols] in `dtype`, in the file's mapping or, for the 8-row interleaved types
// (model/weight_repack.h), in ModelWeights::owned_storage. For a linear layer, num_rows = out features and
// num_cols = in features (GGUF dims are [in, out]).
struct WeightView {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  // AWQ's per-input-channel s^-1, f32 [num_cols], in the mapping: the stored weights are W diag(s), so x is
  // multiplied by this before the product (format::awq_input_scale_name). nullptr: none (every type but AWQ INT4, which
  // may have one).
  const float* input_scale = nullptr;

  int64_t row_bytes() const { return dtype_row_bytes(dtype, num_cols); }
  // For the interleaved types only the first row of a group (of 8 or 16) has a pointer of its own.
  const void* row(int64_t row_idx) const {
    PAGODA_CHECK(row_idx % dtype_interleave_rows(dtype) == 0, "row {} of a {} matrix is inside a group of rows",
                 row_idx, dtype_name(dtype));
    return static_cast<const uint8_t*>(data) + row_idx * row_bytes();
  }
};

// One expert's FFN of a mixture-of-experts layer: a slice of the stacked ffn_{gate,up,down}_exps tensors.
struct ExpertWeights {
  WeightView w_gate, w_up;  // [expert_hidden, dim]
  WeightView w_down;        // [dim, expert_hidden]
};

struct LayerWeights {
  std::vector<float> attn_norm;       // f32 [dim]; empty without pre-norms (OLMo 2)
  // [q_dim, dim] ([2 * q_dim, dim] with ModelConfig::attn_output_gate: each head's query, then its gate), [kv_dim,
  // dim], [kv_dim, dim], [dim, q_dim]
  WeightView wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;      // f32 [q_dim], [kv_dim], [kv_dim]: Qwen2's QKV bias; empty = none
  std::vector<float> bo;              // f32 [dim]: the output projection's bias (gpt-oss); empty = none
  // f32 [num_heads]: each query head's attention sink logit (gpt-oss; kernels::AttentionArgs::sinks); empty = none.
  std::vector<float> sinks;
  // f32 [head_dim]: Qwen3's per-head RMSNorm of Q and K before RoPE ([q_dim], [kv_dim] over the whole projection
  // with ModelConfig::qk_norm_whole, OLMo 2); empty = none
  std::vector<float> q_norm, k_norm;
  // f32 [dim]: Gemma's RMSNorm of the attention output and of the FFN output, before each residual add; empty = none.
  std::vector<float> attn_post_norm, ffn_post_norm;
  std::vector<float> ffn_norm;  // f32 [dim]; empty without pre-norms
  WeightView w_gate, w_up;      // [hidden, dim] (absent in an MoE layer but Gemma 4's)
  WeightView w_down;            // [dim, hidden]
  // Mixture of experts (ModelConfig::num_experts > 0): the router [num_experts, dim] and every expert's FFN.
  WeightView router;
  std::vector<ExpertWeights> experts;
  // gpt-oss's biases, f32, empty = none: the router's [num_experts], and every expert's gate and up biases
  // [num_experts * expert_hidden] and down bias [num_experts * dim], expert e's at e * width.
  std::vector<float> router_bias, expert_gate_bias, expert_up_bias, expert_down_bias;
  // The shared expert (ModelConfig::shared_expert_hidden_dim > 0; else null views) of shared_expert_hidden_dim
  // units, and its gate vector, f32 [dim] (ModelConfig::shared_expert_gated; else empty).
  ExpertWeights shared_expert;
  std::vector<float> shared_expert_gate;
  // f32 [num_experts]: each expert's output multiplied by its scale (ffn_down_exps.scale, Gemma 4's
  // per_expert_scale); empty = none.
  std::vector<float> expert_down_scale;
  // ModelConfig::moe_beside_dense_ffn (else empty): the router input's scale f32 [dim] (ffn_gate_inp.scale), the
  // experts' pre-norm and the two branches' post-norms, f32 [dim] each; the dense FFN is w_gate, w_up, w_down.
  std::vector<float> router_input_scale, ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2;
  // Gemma 4's per-layer input (ModelConfig::per_layer_input_dim > 0; else null views and empty): the gate
  // [per_layer_input_dim, dim], the projection back [dim, per_layer_input_dim], its output norm f32 [dim].
  WeightView per_layer_gate, per_layer_proj;
  std::vector<float> per_layer_post_norm;
  float output_scale = 1.0f;  // Gemma 4's layer_output_scale: the block's output multiplied by it
  // A short-convolution layer (ModelConfig::is_conv_layer; its attention views stay null): in_proj [3 * dim, dim]
  // (rows: B, then C, then x), out_proj [dim, dim], and the depthwise taps, f32 [shortconv_l_cache][dim] (the
  // oldest input's taps first; the file stores them per channel).
  WeightView conv_in, conv_out;
  std::vector<float> conv_taps;
  // A gated DeltaNet layer (ModelConfig::is_delta_net; conv_taps holds its convolution's taps, f32
  // [conv_kernel][conv_dim]): attn_qkv [conv_dim, dim], attn_gate (z) [value_dim, dim], ssm_beta and ssm_alpha
  // [v_heads, dim] or in their place Qwen3-Next's ssm_ba [2 * v_heads, dim] (dn_beta_alpha; per key head its value
  // heads' beta rows, then their alpha rows), ssm_out [dim, value_dim]; f32 ssm_dt's bias and ssm_a [v_heads],
  // ssm_norm [head_dim].
  WeightView dn_qkv, dn_z, dn_beta, dn_alpha, dn_beta_alpha, dn_out;
  std::vector<float> dn_dt_bias, dn_a, dn_norm;
  // Multi-head latent attention (ModelConfig::is_mla; wk and wv stay null, wq is attn_q [num_heads * mla_key_dim,
  // dim] when there is no q LoRA, wo is [dim, num_heads * mla_value_dim]): the q LoRA attn_q_a [q_lora_rank, dim],
  // its norm f32 [q_lora_rank] and attn_q_b [num_heads * mla_key_dim, q_lora_rank]; attn_kv_a_mqa [kv_lora_rank +
  // rope_dim, dim] and the latent's norm f32 [kv_lora_rank]; per query head attn_k_b's [kv_lora_rank, nope] and
  // attn_v_b's [mla_value_dim, kv_lora_rank].
  WeightView mla_q_a, mla_q_b, mla_kv_a;
  std::vector<float> mla_q_a_norm, mla_kv_a_norm;
  std::vector<WeightView> mla_k_b, mla_v_b;
  // f32 [num_experts]: the experts' selection bias (DeepSeek's exp_probs_b), added to the router's probabilities to
  // choose experts, not to weight them; empty = none.
  std::vector<float> expert_selection_bias;
};

struct ModelWeights {
  WeightView token_embd;  // [vocab, dim]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // f32 [dim]
  WeightView output;               // [vocab, dim]; token_embd when the classifier is shared
  // A decoder reranker's head (ModelConfig::last_token_rank_head and cls.output.weight in the file; else null):
  // [outputs, dim], Qwen3-Reranker's "yes" and "no" rows of its LM head.
  WeightView cls_out;
  // Gemma 4's per-layer token embeddings (ModelConfig::per_layer_input_dim = P > 0; else null and empty): the table
  // [vocab, num_layers * P], the projection of the embedded token [num_layers * P, dim] and its norm f32 [P].
  WeightView per_layer_token_embd, per_layer_model_proj;
  std::vector<float> per_layer_proj_norm;
  // Memory that views point into besides the file's mapping (weight_repack.h's repacked matrices).
  std::vector<std::shared_ptr<const void>> owned_storage;
};

// dst[0..n) = the first n elements at `src` in `dtype`, as f32 (n a multiple of the block size; for kInt8, src
// is a whole row). An AWQ input scale is not undone here: the embedding table never has one.
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);

// Errors name the tensor: "model.gguf: blk.3.attn_k.weight has shape [64, 64], expected [64, 32]".
// Biases (attn_{q,k,v,output}.bias, ffn_gate_inp.bias, ffn_{gate,up,down}_exps.bias), attention sinks
// (attn_sinks.weight) and Q/K norms (attn_{q,k}_norm.weight) are loaded when present; an MoE layer's shared
// expert (ffn_{gate,up,down}_shexp, gate vector ffn_gate_inp_shexp [dim] or [dim, 1]) when the config has one; a
// reranker's cls.output.weight [dim, outputs] where the family reads one (ModelConfig::last_token_rank_head).
Result<ModelWeights> model_weights_from_tensors(const TensorSet& tensors, const ModelConfig& config);
Result<ModelWeights> model_weights_from_gguf(const format::GgufFile& file, const ModelConfig& config);

}  // namespace pagoda
