// Workspace: every activation buffer one forward step needs, sized once at start-up for the largest step
// (max_tokens rows, max_context positions), so the hot path allocates nothing. Owned by the caller (the engine),
// one per concurrent forward; the model only borrows it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "quant/block_q8_0.h"
#include "quant/block_q8_K.h"

namespace pagoda {

struct Workspace {
  // max_hidden_rows: BatchView::hidden_rows a step may ask for (0: none).
  Workspace(const ModelConfig& config, int32_t max_tokens, int32_t max_context, int32_t max_logits_rows,
            int32_t num_threads = 1, int32_t max_hidden_rows = 0);

  int32_t max_tokens;
  int32_t max_context;
  // The context a sequence is configured for (EngineConfig::rope_context; the constructor sets max_context): what
  // a RoPE that depends on the context reads (LongRoPE's factor set, model/rope_tables.h), never the sizes above,
  // so that sizing a workspace to a request never changes a logit.
  int32_t rope_context;
  int32_t max_logits_rows;
  int32_t max_hidden_rows;
  int32_t num_threads;          // threads that may share this workspace in one forward call
  std::vector<float> x;         // f32 [max_tokens, dim]: the residual stream
  std::vector<float> xb;        // f32 [max_tokens, max(dim, q_dim)]: normed input / attention output
  std::vector<float> q;         // f32 [max_tokens, q_dim]
  std::vector<float> k;         // f32 [max_tokens, kv_dim]
  std::vector<float> v;         // f32 [max_tokens, kv_dim]
  std::vector<float> proj;      // f32 [max_tokens, dim]: output of wo / w_down before the residual add
  std::vector<float> gate;      // f32 [max_tokens, ffn_width]: the dense FFN's or the shared expert's
  std::vector<float> up;        // f32 [max_tokens, ffn_width]
  std::vector<float> scores;    // f32 [num_threads, max_context]: attention scores of one head per thread
  std::vector<float> rope_cos;  // f32 [max_tokens, rope_dim / 2]
  std::vector<float> rope_sin;  // f32 [max_tokens, rope_dim / 2]
  // The windowed layers' tables when their RoPE base or scale differs (Gemma 3's local base); else empty.
  std::vector<float> rope_cos_swa, rope_sin_swa;  // f32 [max_tokens, max(rope_dim, rope_dim_swa) / 2]
  // A NoPE layer's K "rotation" (cos 1, sin 0: the same bits out); one row, every token's.
  std::vector<float> rope_identity_cos, rope_identity_sin;  // f32 [rope_dim / 2]
  // Gemma 4's per-layer inputs (ModelConfig::per_layer_input_dim = P > 0; else empty): every layer's for each token,
  // and one layer's gated row.
  std::vector<float> per_layer_in;    // f32 [max_tokens, num_layers * P]
  std::vector<float> per_layer_gate;  // f32 [max_tokens, P]
  std::vector<float> final_x;                     // f32 [max_logits_rows, dim]
  std::vector<float> logits;                      // f32 [max_logits_rows, vocab]
  // f32 [max_hidden_rows, dim]: BatchView::hidden_rows after the final norm
  std::vector<float> hidden;
  // Q8_0 [max_tokens, max(dim, ffn_width) / 32]: activations quantized once for the quantized matmuls, so the
  // threads can split a matmul's rows instead of its tokens (small batches), and so one quantization (fused with
  // RMSNorm) serves Q, K and V, or gate and up.
  std::vector<quant::BlockQ8_0> xq;
  // Q8_0 [max_tokens, ffn_width / 32]: silu(gate) * up quantized for a quantized w_down, by the fused gate/up job
  // while xq still holds its input.
  std::vector<quant::BlockQ8_0> hq;
  // The same two as q8_K for the K-quant weights: [max_tokens, max(dim, ffn_width) / 256] and
  // [max_tokens, ffn_width / 256].
  std::vector<quant::BlockQ8_K> xqk;
  std::vector<quant::BlockQ8_K> hqk;
  // The same for INT8 weights: int8 [min(max_tokens, kMaxRowSplitTokens), max(dim, ffn_width)] values and their
  // f32 [min(max_tokens, kMaxRowSplitTokens)] per-token scales.
  std::vector<int8_t> xq_int8;
  std::vector<float> xq_int8_scales;
  // f32 [max(max_tokens, max_logits_rows), max(dim, ffn_width)]: a linear layer's input times its AWQ input scale.
  std::vector<float> x_scaled;
  // Tensor parallel only, sized on first use on every rank: f32 [rows, vocab] of every rank's logit columns, rank
  // after rank, as the group's first rank receives them before putting each row in order.
  std::vector<float> logits_gather;
  // Mixture of experts only (ModelConfig::num_experts > 0; else empty). A step's (token, chosen expert) pairs are
  // "assignments", k = num_experts_used per token; grouped by expert they are the rows of the moe_* buffers.
  std::vector<float> router_logits;  // f32 [max_tokens, num_experts]
  std::vector<int32_t> moe_choice;   // [max_tokens, k]: token t's k-th expert, in llama.cpp's top-k order
  std::vector<float> moe_weight;     // f32 [max_tokens, k]: its weight
  std::vector<int32_t> moe_row;      // [max_tokens, k]: its row in the grouped buffers
  std::vector<int32_t> moe_offset;   // [num_experts + 1]: expert e's rows are [moe_offset[e], moe_offset[e + 1])
  std::vector<int32_t> moe_token;    // [max_tokens * k]: the token of each grouped row
  std::vector<int32_t> moe_active;   // [num_experts]: the experts with rows this step, first moe_num_active
  int32_t moe_num_active = 0;
  std::vector<float> moe_x;              // f32 [max_tokens * k, dim]: each row's normed input
  std::vector<quant::BlockQ8_0> moe_xq;  // Q8_0 [max_tokens * k, dim / 32]: the same, quantized
  std::vector<float> moe_gate, moe_up;   // f32 [max_tokens * k, expert_hidden]
  std::vector<quant::BlockQ8_0> moe_hq;  // Q8_0 [max_tokens * k, expert_hidden / 32]: act(gate) * up
  // q8_K [max_tokens * k, dim / 256] and [max_tokens * k, expert_hidden / 256]: the same two for K-quant experts
  std::vector<quant::BlockQ8_K> moe_xqk, moe_hqk;
  std::vector<float> moe_out;            // f32 [max_tokens * k, dim]: each row's expert output
  // f32 [max_tokens, dim]: the dense FFN's post-normed output beside the experts (ModelConfig::moe_beside_dense_ffn;
  // else empty).
  std::vector<float> moe_dense_out;
  // Short-convolution layers only (ModelConfig::layer_is_conv; else empty): f32 [max_tokens, 3 * dim], in_proj's B,
  // C and x of each token.
  std::vector<float> conv_bcx;
  // Gated DeltaNet layers only (ModelConfig::is_delta_net; else empty), per token: f32 [max_tokens, conv_dim]
  // attn_qkv's row (convolved in place), [max_tokens, value_dim] the gate z and the heads' output, [max_tokens,
  // v_heads] beta and the log decay g; Qwen3-Next's (ModelConfig::delta_net_grouped_v_heads) [max_tokens,
  // 2 * v_heads] ssm_ba's rows, before they are split into beta and alpha.
  std::vector<float> dn_qkv, dn_z, dn_out, dn_beta, dn_g, dn_beta_alpha;
  // Gated attention only (ModelConfig::attn_output_gate; else empty): f32 [max_tokens, 2 * q_dim] attn_q's rows
  // (query and gate per head), and [max_tokens, q_dim] the gates.
  std::vector<float> q_and_gate, attn_gate;
  // Multi-head latent attention only (ModelConfig::is_mla; else empty): f32 [max_tokens, num_heads * mla_key_dim]
  // the query heads before absorption, [max_tokens, mla_q_lora_rank] the q LoRA's inner row, [max_tokens,
  // max(nope, kv_lora_rank)] and [max_tokens, max(kv_lora_rank, mla_value_dim)] one head's rows into and out of its
  // attn_k_b or attn_v_b, [max_tokens, num_heads * mla_value_dim] the heads' values before attn_output.
  std::vector<float> mla_q, mla_q_a, mla_head_in, mla_head_out, mla_values;
  static constexpr int32_t kMaxRowSplitTokens = 64;
};

}  // namespace pagoda
