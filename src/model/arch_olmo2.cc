// The olmo2 family (OLMo 2): no RMSNorm before attention or the FFN; instead each block's output is normed before
// its residual add (post_attention_norm, post_ffw_norm), Q/K RMSNorm over each token's whole projection (weights of
// q_dim and kv_dim, not per head), NeoX RoPE on unpermuted rows, no biases, untied output. OLMo 3 (the same
// architecture with olmo2.attention.sliding_window) is refused by name.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

void set_olmo2_switches(ModelConfig& c) {
  c.pre_norms = false;
  c.post_norms = true;
  c.qk_norm_whole = true;
}

Status read_olmo2_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > 0)
    return make_error(fmt::format("{}: olmo2.attention.sliding_window = {} (OLMo 3's windowed layers) is not supported",
                                  file.name(), *window));
  set_olmo2_switches(c);
  return Status::ok_status();
}

Status read_olmo2_config(const HfConfigFields& f, HfConfig& h) {
  if (f.has("sliding_window")) return f.error("sliding_window (OLMo 3's windowed layers) is not supported");
  set_olmo2_switches(h.config);
  return Status::ok_status();
}

void write_olmo2_config(const HfConfig&, nlohmann::ordered_json& j) { j["model_type"] = "olmo2"; }

void olmo2_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  const auto add = [&](const char* hf, const char* gguf, std::vector<int64_t> shape, const char* fields, Kind kind) {
    out.push_back({p + hf, {}, format::gguf_tensor::block_tensor(layer, gguf), std::move(shape), fields, kind});
  };
  using namespace format::gguf_tensor;
  add("self_attn.q_proj.weight", kAttnQ, {q_dim, dim}, "num_attention_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.k_proj.weight", kAttnK, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.v_proj.weight", kAttnV, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.o_proj.weight", kAttnOutput, {dim, q_dim}, "hidden_size, num_attention_heads * head_dim",
      Kind::kMatrix);
  add("self_attn.q_norm.weight", kAttnQNorm, {q_dim}, "num_attention_heads * head_dim", Kind::kNorm);
  add("self_attn.k_norm.weight", kAttnKNorm, {kv_dim}, "num_key_value_heads * head_dim", Kind::kNorm);
  add("post_attention_layernorm.weight", kPostAttentionNorm, {dim}, "hidden_size", Kind::kNorm);
  add("mlp.gate_proj.weight", kFfnGate, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("mlp.up_proj.weight", kFfnUp, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("mlp.down_proj.weight", kFfnDown, {dim, hidden}, "hidden_size, intermediate_size", Kind::kMatrix);
  add("post_feedforward_layernorm.weight", kPostFfwNorm, {dim}, "hidden_size", Kind::kNorm);
}

}  // namespace

extern const ArchitectureFamily kOlmo2Family{"olmo2", true, read_olmo2_gguf, nullptr};
extern const HfFamily kOlmo2Hf{"Olmo2ForCausalLM", "olmo2", "", read_olmo2_config, write_olmo2_config,
                               olmo2_layer_tensors};

}  // namespace pagoda
