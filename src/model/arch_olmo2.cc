// The olmo2 family (OLMo 2): no RMSNorm before attention or the FFN; instead each block's output is normed before
// its residual add (post_attention_norm, post_ffw_norm), Q/K RMSNorm over each token's whole projection (weights of
// q_dim and kv_dim, not per head), NeoX RoPE on unpermuted rows, no biases, untied output. OLMo 3 is the same
// architecture with olmo2.attention.sliding_window: windowed layers (the pattern's period 4 by default: three
// windowed, one full) whose RoPE is never scaled (no YaRN blend, magnitude 1), as llama.cpp's olmo2 runs them.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

constexpr int32_t kOlmo3SwaPeriod = 4;

void set_olmo2_switches(ModelConfig& c) {
  c.pre_norms = false;
  c.post_norms = true;
  c.qk_norm_whole = true;
  if (c.sliding_window > 0) {
    if (c.rope_theta_swa <= 0.0f) c.rope_theta_swa = c.rope_theta;
    c.rope_freq_scale_swa = 1.0f;
    c.rope_swa_plain = true;
  }
}

Status read_olmo2_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > uint32_t(ModelConfigLimits::kMaxContextLength))
    return make_error(fmt::format("{}: olmo2.attention.sliding_window = {} is out of range", file.name(), *window));
  if (window && *window > 0) {
    c.sliding_window = int32_t(*window);
    PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, kOlmo3SwaPeriod, c));
    PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, "rope.freq_base_swa"));
    if (base_swa) c.rope_theta_swa = *base_swa;
  }
  set_olmo2_switches(c);
  return Status::ok_status();
}

void write_olmo2_gguf(const ModelConfig& c, format::GgufWriter& w) {
  if (c.sliding_window <= 0) return;
  w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  write_gguf_swa_layers(c, w);
}

Status read_olmo2_config(const HfConfigFields& f, HfConfig& h) {
  if (f.has("sliding_window")) return f.error("sliding_window is OLMo 3's (Olmo3ForCausalLM), not OLMo 2's");
  set_olmo2_switches(h.config);
  return Status::ok_status();
}

// OLMo 3: sliding_window with layer_types (default: three windowed layers then a full one).
Status read_olmo3_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.int_or("sliding_window", 0, ModelConfigLimits::kMaxContextLength));
  if (c.sliding_window > 0) {
    if (f.has("layer_types")) {
      PAGODA_RETURN_IF_ERROR(read_hf_layer_types(f, c));
    } else {
      c.layer_is_swa = swa_pattern_of_period(c.num_layers, kOlmo3SwaPeriod);
    }
  }
  set_olmo2_switches(c);
  return Status::ok_status();
}

void write_olmo2_config(const HfConfig&, nlohmann::ordered_json& j) { j["model_type"] = "olmo2"; }

void write_olmo3_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "olmo3";
  j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  if (c.sliding_window > 0) {
    nlohmann::ordered_json types = nlohmann::ordered_json::array();
    for (int32_t l = 0; l < c.num_layers; ++l)
      types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
    j["layer_types"] = std::move(types);
  }
}

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

extern const ArchitectureFamily kOlmo2Family{"olmo2", true, read_olmo2_gguf, write_olmo2_gguf};
extern const HfFamily kOlmo2Hf{"Olmo2ForCausalLM", "olmo2", "", read_olmo2_config, write_olmo2_config,
                               olmo2_layer_tensors};
extern const HfFamily kOlmo3Hf{"Olmo3ForCausalLM", "olmo2", "", read_olmo3_config, write_olmo3_config,
                               olmo2_layer_tensors};

}  // namespace pagoda
