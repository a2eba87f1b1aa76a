// Workspace sizing.
#include "model/workspace.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

Workspace::Workspace(const ModelConfig& c, int32_t max_tokens_, int32_t max_context_, int32_t max_logits_rows_,
                     int32_t num_threads_, int32_t max_hidden_rows_)
    : max_tokens(max_tokens_),
      max_context(max_context_),
      rope_context(max_context_),
      max_logits_rows(max_logits_rows_),
      max_hidden_rows(max_hidden_rows_),
      num_threads(num_threads_) {
  PAGODA_CHECK(max_tokens > 0 && max_context > 0 && max_logits_rows > 0 && num_threads > 0 && max_hidden_rows >= 0);
  const size_t t = size_t(max_tokens);
  x.resize(t * size_t(c.dim));
  const size_t attn_width = size_t(std::max(c.dim, c.q_dim()));  // xb also holds the attention output
  xb.resize(t * attn_width);
  q.resize(t * size_t(c.q_dim()));
  k.resize(t * size_t(c.kv_dim()));
  v.resize(t * size_t(c.kv_dim()));
  proj.resize(t * size_t(c.dim));
  gate.resize(t * size_t(c.ffn_width()));
  up.resize(t * size_t(c.ffn_width()));
  scores.resize(size_t(num_threads) * size_t(max_context));
  rope_cos.resize(t * size_t(c.rope_dim / 2));
  rope_sin.resize(t * size_t(c.rope_dim / 2));
  if (c.rope_theta_swa > 0.0f || c.rope_freq_scale_swa > 0.0f || c.rope_dim_swa > 0) {
    const size_t half = size_t(std::max(c.rope_dim, c.rope_dim_swa) / 2);
    rope_cos_swa.resize(t * half);
    rope_sin_swa.resize(t * half);
  }
  if (c.per_layer_input_dim > 0) {
    per_layer_in.resize(t * size_t(c.num_layers) * size_t(c.per_layer_input_dim));
    per_layer_gate.resize(t * size_t(c.per_layer_input_dim));
  }
  rope_identity_cos.assign(size_t(c.rope_dim / 2), 1.0f);
  rope_identity_sin.assign(size_t(c.rope_dim / 2), 0.0f);
  final_x.resize(size_t(max_logits_rows) * size_t(c.dim));
  logits.resize(size_t(max_logits_rows) * size_t(c.vocab_size));
  hidden.resize(size_t(max_hidden_rows) * size_t(c.dim));
  const size_t widest = size_t(std::max({c.dim, c.ffn_width(), c.q_dim(), c.delta_net_value_dim(), c.mla_q_lora_rank,
                                         c.num_heads * c.mla_value_dim}));
  xq.resize(t * (widest / quant::BlockQ8_0::kNumValues + 1));
  hq.resize(t * size_t(c.ffn_width() / quant::BlockQ8_0::kNumValues));
  xqk.resize(t * (widest / quant::kQK_K + 1));
  hqk.resize(t * size_t(c.ffn_width() / quant::kQK_K));
  const size_t row_split_tokens = size_t(std::min(max_tokens, kMaxRowSplitTokens));
  xq_int8.resize(row_split_tokens * widest);
  xq_int8_scales.resize(row_split_tokens);
  x_scaled.resize(size_t(std::max(max_tokens, max_logits_rows)) * widest);
  if (c.num_conv_layers() > 0 && !c.is_delta_net()) conv_bcx.resize(t * 3 * size_t(c.dim));
  if (c.is_delta_net()) {
    dn_qkv.resize(t * size_t(c.delta_net_conv_dim()));
    dn_z.resize(t * size_t(c.delta_net_value_dim()));
    dn_out.resize(t * size_t(c.delta_net_value_dim()));
    dn_beta.resize(t * size_t(c.delta_net_v_heads));
    dn_g.resize(t * size_t(c.delta_net_v_heads));
    if (c.delta_net_grouped_v_heads) dn_beta_alpha.resize(t * 2 * size_t(c.delta_net_v_heads));
  }
  if (c.is_mla()) {
    mla_q.resize(t * size_t(c.num_heads) * size_t(c.mla_key_dim));
    mla_q_a.resize(t * size_t(c.mla_q_lora_rank));
    mla_head_in.resize(t * size_t(std::max(c.mla_nope_dim(), c.mla_kv_lora_rank)));
    mla_head_out.resize(t * size_t(std::max(c.mla_kv_lora_rank, c.mla_value_dim)));
    mla_values.resize(t * size_t(c.num_heads) * size_t(c.mla_value_dim));
  }
  if (c.attn_output_gate) {
    q_and_gate.resize(t * 2 * size_t(c.q_dim()));
    attn_gate.resize(t * size_t(c.q_dim()));
  }
  if (c.num_experts > 0) {
    const size_t e = size_t(c.num_experts), k = size_t(c.num_experts_used), rows = t * k;
    const size_t dim = size_t(c.dim), expert_hidden = size_t(c.expert_hidden_dim);
    constexpr size_t kQk = quant::BlockQ8_0::kNumValues;
    router_logits.resize(t * e);
    moe_choice.resize(rows);
    moe_weight.resize(rows);
    moe_row.resize(rows);
    moe_offset.resize(e + 1);
    moe_token.resize(rows);
    moe_active.resize(e);
    moe_x.resize(rows * dim);
    moe_xq.resize(rows * (dim / kQk));
    moe_gate.resize(rows * expert_hidden);
    moe_up.resize(rows * expert_hidden);
    moe_hq.resize(rows * (expert_hidden / kQk));
    moe_xqk.resize(rows * (dim / quant::kQK_K));
    moe_hqk.resize(rows * (expert_hidden / quant::kQK_K));
    moe_out.resize(rows * dim);
    if (c.moe_beside_dense_ffn) moe_dense_out.resize(t * dim);
  }
}

}  // namespace pagoda
