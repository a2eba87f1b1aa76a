// The Qwen families: qwen2 (QKV bias), qwen2moe (Qwen1.5-MoE / Qwen2-MoE: Qwen2 attention with a mixture of
// experts whose top-k softmax weights are not renormalized unless qwen2moe.expert_weights_norm is true, which
// llama.cpp never does and no released model's norm_topk_prob asks, plus a shared expert gated by
// sigmoid(x . ffn_gate_inp_shexp)), qwen3 (per-head Q/K RMSNorm) and qwen3moe (Qwen3 attention with a mixture of
// experts: softmax router, top-k renormalized unless qwen3moe.expert_weights_norm is false; llama.cpp always
// renormalizes, as Qwen3-30B-A3B's norm_topk_prob asks). A qwen3 GGUF may carry a reranker's head (cls.output, read
// as llama.cpp does for rank pooling: ModelConfig::last_token_rank_head). All run NeoX RoPE on unpermuted rows; the Q/K norms and
// biases are found by tensor name.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

Status read_qwen3moe_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0)
    return make_error(fmt::format("{}: qwen3moe needs qwen3moe.expert_count and expert_used_count", file.name()));
  PAGODA_ASSIGN_OR_RETURN(std::optional<bool> norm, file.get_bool("qwen3moe.expert_weights_norm"));
  c.expert_weights_norm = norm.value_or(true);
  return Status::ok_status();
}

// llama.cpp reads a qwen3 file's cls.output.weight (Qwen3-Reranker's yes/no rows) for rank pooling.
Status read_qwen3_gguf(const format::GgufFile&, ModelConfig& c) {
  c.last_token_rank_head = true;
  return Status::ok_status();
}

void write_qwen3moe_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gguf_experts(c, w);
  if (!c.expert_weights_norm) w.set("qwen3moe.expert_weights_norm", format::GgufValue::boolean(false));
}

// llama.cpp's qwen2moe: expert_feed_forward_length defaults to feed_forward_length / expert_used_count, the shared
// expert's width (expert_shared_feed_forward_length) to feed_forward_length; the shared expert is always gated.
Status read_qwen2moe_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0)
    return make_error(fmt::format("{}: qwen2moe needs qwen2moe.expert_count and expert_used_count", file.name()));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> expert_width,
                          gguf_arch_u32(file, c, family_key::kExpertFeedForwardLength));
  if (!expert_width) {
    c.expert_hidden_dim = c.hidden_dim / c.num_experts_used;
    if (c.expert_hidden_dim == 0)
      return make_error(
          fmt::format("{}: qwen2moe.expert_feed_forward_length is missing and feed_forward_length {} "
                      "is smaller than expert_used_count {}",
                      file.name(), c.hidden_dim, c.num_experts_used));
  }
  PAGODA_RETURN_IF_ERROR(read_gguf_shared_expert(file, c.hidden_dim, c));
  c.shared_expert_gated = true;
  PAGODA_ASSIGN_OR_RETURN(std::optional<bool> norm, file.get_bool("qwen2moe.expert_weights_norm"));
  c.expert_weights_norm = norm.value_or(false);
  return Status::ok_status();
}

void write_qwen2moe_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gguf_experts(c, w);
  write_gguf_shared_expert(c, w);
  if (c.expert_weights_norm) w.set("qwen2moe.expert_weights_norm", format::GgufValue::boolean(true));
}

// Qwen2/3's sliding window (on layers from max_window_layers up) is off in every released model; refused if on.
Status refuse_sliding_window(const HfConfigFields& f, const HfConfig& h) {
  PAGODA_ASSIGN_OR_RETURN(bool use_sliding, f.bool_or("use_sliding_window", false));
  if (use_sliding) return f.error(fmt::format("use_sliding_window: true is not supported for {}", h.hf_architecture));
  return Status::ok_status();
}

Status read_qwen2_config(const HfConfigFields& f, HfConfig& h) {
  h.qkv_bias = true;
  return refuse_sliding_window(f, h);
}

Status read_qwen3_config(const HfConfigFields& f, HfConfig& h) {
  h.qk_norm = true;
  return refuse_sliding_window(f, h);
}

// The expert fields Qwen2-MoE and Qwen3-MoE share; their dense layers (decoder_sparse_step, mlp_only_layers) refused.
Status read_qwen_experts(const HfConfigFields& f, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_experts", Limits::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int("num_experts_per_tok", c.num_experts));
  PAGODA_ASSIGN_OR_RETURN(c.expert_hidden_dim, f.positive_int("moe_intermediate_size", Limits::kMaxFeedForwardLength));
  PAGODA_ASSIGN_OR_RETURN(c.expert_weights_norm, f.bool_or("norm_topk_prob", false));
  PAGODA_ASSIGN_OR_RETURN(int32_t sparse_step, f.positive_int_or("decoder_sparse_step", 1));
  const bool dense_layers =
      f.has("mlp_only_layers") && f.json()["mlp_only_layers"].is_array() && !f.json()["mlp_only_layers"].empty();
  if (sparse_step != 1 || dense_layers)
    return f.error("dense layers between the expert layers (decoder_sparse_step, mlp_only_layers) are not supported");
  return Status::ok_status();
}

Status read_qwen3moe_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_qwen3_config(f, h));
  return read_qwen_experts(f, h.config);
}

// Qwen2-MoE: Qwen2's attention (qkv_bias, default true) and the experts, plus the sigmoid-gated shared expert.
Status read_qwen2moe_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(refuse_sliding_window(f, h));
  PAGODA_ASSIGN_OR_RETURN(const bool qkv_bias, f.bool_or("qkv_bias", true));
  h.qkv_bias = h.qkv_bias || qkv_bias;  // attention_bias, read with the common fields, also turns it on
  PAGODA_RETURN_IF_ERROR(read_qwen_experts(f, h.config));
  PAGODA_ASSIGN_OR_RETURN(h.config.shared_expert_hidden_dim,
                          f.positive_int("shared_expert_intermediate_size", Limits::kMaxFeedForwardLength));
  h.config.shared_expert_gated = true;
  return Status::ok_status();
}

void write_qwen2_config(const HfConfig&, nlohmann::ordered_json& j) { j["model_type"] = "qwen2"; }
void write_qwen3_config(const HfConfig&, nlohmann::ordered_json& j) { j["model_type"] = "qwen3"; }

void write_qwen_experts(const HfConfig& h, nlohmann::ordered_json& j) {
  j["num_experts"] = h.config.num_experts;
  j["num_experts_per_tok"] = h.config.num_experts_used;
  j["moe_intermediate_size"] = h.config.expert_hidden_dim;
  j["norm_topk_prob"] = h.config.expert_weights_norm;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::ordered_json::array();
}

void write_qwen3moe_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "qwen3_moe";
  write_qwen_experts(h, j);
}

void write_qwen2moe_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "qwen2_moe";
  j["qkv_bias"] = h.qkv_bias;
  write_qwen_experts(h, j);
  j["shared_expert_intermediate_size"] = h.config.shared_expert_hidden_dim;
}

void dense_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_dense_ffn_tensors(h, layer, out);
}

void moe_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_moe_tensors(h, layer, "mlp.gate.weight", "mlp.experts.{expert}.{proj}.weight", "gate_proj", "up_proj",
                        "down_proj", out);
}

void qwen2moe_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  moe_layer_tensors(h, layer, out);
  append_hf_shared_expert_tensors(h, layer, "mlp.shared_expert.{proj}.weight", "gate_proj", "up_proj", "down_proj",
                                  "mlp.shared_expert_gate.weight", out);
}

}  // namespace

extern const ArchitectureFamily kQwen2Family{"qwen2", true, nullptr, nullptr};
extern const ArchitectureFamily kQwen2MoeFamily{"qwen2moe", true, read_qwen2moe_gguf, write_qwen2moe_gguf};
extern const ArchitectureFamily kQwen3Family{"qwen3", true, read_qwen3_gguf, nullptr};
extern const ArchitectureFamily kQwen3MoeFamily{"qwen3moe", true, read_qwen3moe_gguf, write_qwen3moe_gguf};

extern const HfFamily kQwen2Hf{"Qwen2ForCausalLM", "qwen2", "", read_qwen2_config, write_qwen2_config,
                               dense_layer_tensors};
extern const HfFamily kQwen2MoeHf{"Qwen2MoeForCausalLM", "qwen2moe", "", read_qwen2moe_config, write_qwen2moe_config,
                                  qwen2moe_layer_tensors};
extern const HfFamily kQwen3Hf{"Qwen3ForCausalLM", "qwen3", "", read_qwen3_config, write_qwen3_config,
                               dense_layer_tensors};
extern const HfFamily kQwen3MoeHf{"Qwen3MoeForCausalLM", "qwen3moe",       "", read_qwen3moe_config,
                                  write_qwen3moe_config, moe_layer_tensors};

}  // namespace pagoda
