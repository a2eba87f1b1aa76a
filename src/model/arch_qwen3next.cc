// The qwen3next family (Qwen3-Next, llama.cpp's QWEN3NEXT): Qwen3.5's hybrid of gated DeltaNet layers and gated full
// attention (the keys and layer layout it shares with qwen35: architecture.h's read_gguf_gated_delta_net), with these
// differences: the DeltaNet value heads stay grouped by key head (value head h reads key head h / (v_heads /
// k_heads): ModelConfig::delta_net_grouped_v_heads), beta and alpha come from one matrix, ssm_ba (per key head its
// value heads' beta rows, then their alpha rows), the rotary is plain NeoX over rope.dimension_count dims (no M-RoPE
// sections), and every layer's FFN is a mixture of experts (softmax router, top-k renormalized, as llama.cpp always
// does for it) with a shared expert gated by sigmoid(x . ffn_gate_inp_shexp), of expert_shared_feed_forward_length
// units (default feed_forward_length). The older fused ssm_in projection is refused by name (model_weights.cc).
// Its HF folders (Qwen3NextForCausalLM), read as llama.cpp's converter writes them: in_proj_qkvz split into attn_qkv
// and attn_gate (per key head q, k, v, z: every q, then every k, every v; every z), in_proj_ba kept as ssm_ba, the
// value heads left grouped, A_log as -exp(A_log), conv1d's [C, 1, L] taps as [L, C] f32, every RMSNorm but the
// DeltaNet output norm as 1 + w; decoder_sparse_step other than 1 and mlp_only_layers (dense layers) are refused.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

Status read_qwen3next_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_gated_delta_net(file, c));
  c.delta_net_grouped_v_heads = true;
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0)
    return make_error(fmt::format("{}: qwen3next needs {} and {}", file.name(), arch_key(c, family_key::kExpertCount),
                                  arch_key(c, family_key::kExpertUsedCount)));
  PAGODA_RETURN_IF_ERROR(read_gguf_shared_expert(file, c.hidden_dim, c));
  if (c.shared_expert_hidden_dim <= 0)
    return make_error(fmt::format("{}: qwen3next needs a shared expert ({} or {})", file.name(),
                                  arch_key(c, family_key::kExpertSharedFeedForwardLength),
                                  arch_key(c, gguf_key::kFeedForwardLength)));
  c.shared_expert_gated = true;
  c.expert_weights_norm = true;
  return Status::ok_status();
}

void write_qwen3next_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gguf_gated_delta_net(c, w);
  write_gguf_experts(c, w);
  write_gguf_shared_expert(c, w);
}

Status read_qwen3next_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_hf_gated_delta_net(f, h));
  ModelConfig& c = h.config;
  c.delta_net_grouped_v_heads = true;
  PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_experts", ModelConfigLimits::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int("num_experts_per_tok", c.num_experts));
  PAGODA_ASSIGN_OR_RETURN(c.expert_hidden_dim,
                          f.positive_int("moe_intermediate_size", ModelConfigLimits::kMaxFeedForwardLength));
  PAGODA_ASSIGN_OR_RETURN(c.shared_expert_hidden_dim, f.positive_int("shared_expert_intermediate_size",
                                                                     ModelConfigLimits::kMaxFeedForwardLength));
  PAGODA_ASSIGN_OR_RETURN(const int32_t sparse_step, f.positive_int_or("decoder_sparse_step", 1));
  if (sparse_step != 1)
    return f.error(fmt::format("decoder_sparse_step {} is not supported (every layer MoE: 1)", sparse_step));
  if (f.has("mlp_only_layers") && !(f.json()["mlp_only_layers"].is_array() && f.json()["mlp_only_layers"].empty()))
    return f.error("mlp_only_layers is not supported (every layer MoE: [])");
  c.shared_expert_gated = true;
  c.expert_weights_norm = true;  // llama.cpp renormalizes qwen3next's top-k whatever norm_topk_prob says
  return Status::ok_status();
}

void write_qwen3next_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "qwen3_next";
  j["linear_conv_kernel_dim"] = c.delta_net_conv_kernel;
  j["linear_key_head_dim"] = c.delta_net_head_dim;
  j["linear_value_head_dim"] = c.delta_net_head_dim;
  j["linear_num_key_heads"] = c.delta_net_k_heads;
  j["linear_num_value_heads"] = c.delta_net_v_heads;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int32_t l = 0; l < c.num_layers; ++l)
    types.push_back(c.is_conv_layer(l) ? "linear_attention" : "full_attention");
  j["layer_types"] = types;
  j["partial_rotary_factor"] = double(c.rope_dim) / double(c.head_dim);
  j["num_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.num_experts_used;
  j["moe_intermediate_size"] = c.expert_hidden_dim;
  j["shared_expert_intermediate_size"] = c.shared_expert_hidden_dim;
  j["norm_topk_prob"] = true;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::ordered_json::array();
}

void qwen3next_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, value_dim = c.delta_net_value_dim(), v_heads = c.delta_net_v_heads;
  const int64_t qkvz_rows = c.delta_net_conv_dim() + value_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "input_layernorm.weight", {}, t::block_tensor(layer, t::kAttnNorm), {dim}, "hidden_size",
                 Kind::kNorm, Rewrite::kAddOne});
  if (!c.is_conv_layer(layer)) {
    append_hf_gated_attention_tensors(h, layer, out);
    append_hf_gated_hybrid_ffn_tensors(h, layer, out);
    return;
  }
  const std::string a = p + "linear_attn.";
  const char* heads = "linear_num_value_heads";
  const char* qkvz_fields =
      "2 * linear_num_key_heads * linear_key_head_dim + 2 * linear_num_value_heads * linear_value_head_dim, "
      "hidden_size";
  out.push_back({a + "in_proj_qkvz.weight", {}, t::block_tensor(layer, t::kAttnQkv), {qkvz_rows, dim}, qkvz_fields,
                 Kind::kMatrix, Rewrite::kQkvzToQkv});
  out.push_back({a + "in_proj_qkvz.weight", {}, t::block_tensor(layer, t::kAttnGate), {qkvz_rows, dim}, qkvz_fields,
                 Kind::kMatrix, Rewrite::kQkvzToZ});
  out.push_back({a + "conv1d.weight", {}, t::block_tensor(layer, t::kSsmConv1d),
                 {c.delta_net_conv_dim(), 1, c.delta_net_conv_kernel}, "conv channels, 1, linear_conv_kernel_dim",
                 Kind::kNorm, Rewrite::kSqueezeToF32});
  out.push_back({a + "dt_bias", {}, t::block_tensor(layer, t::kSsmDt, "bias"), {v_heads}, heads, Kind::kBias,
                 Rewrite::kToF32});
  out.push_back({a + "A_log", {}, t::block_tensor(layer, t::kSsmA, ""), {v_heads}, heads, Kind::kBias,
                 Rewrite::kNegExpToF32});
  out.push_back({a + "in_proj_ba.weight", {}, t::block_tensor(layer, t::kSsmBetaAlpha), {2 * v_heads, dim},
                 "2 * linear_num_value_heads, hidden_size"});
  out.push_back({a + "norm.weight", {}, t::block_tensor(layer, t::kSsmNorm), {c.delta_net_head_dim},
                 "linear_value_head_dim", Kind::kNorm, Rewrite::kToF32});
  out.push_back({a + "out_proj.weight", {}, t::block_tensor(layer, t::kSsmOut), {dim, value_dim},
                 "hidden_size, linear_num_value_heads * linear_value_head_dim"});
  append_hf_gated_hybrid_ffn_tensors(h, layer, out);
}

}  // namespace

extern const ArchitectureFamily kQwen3NextFamily{"qwen3next", true, read_qwen3next_gguf, write_qwen3next_gguf};

extern const HfFamily kQwen3NextHf{"Qwen3NextForCausalLM", "qwen3next", "", read_qwen3next_config,
                                   write_qwen3next_config, qwen3next_layer_tensors};

}  // namespace pagoda
