// The exaone4 family (EXAONE 4.0): no RMSNorm before attention or the FFN; each block's output is normed before its
// residual add (post_attention_norm, post_ffw_norm), per-head Q/K RMSNorm, NeoX RoPE on unpermuted rows, llama3 rope
// scaling (rope_freqs.weight). The 32B's hybrid attention: sliding-window layers (exaone4.attention.sliding_window,
// the pattern's period 4 by default: three windowed layers then a full one) rotate, its full layers are NoPE.
// llama.cpp turns the window on for the 64-layer model only (its window 4096 when the key is missing); pagoda
// follows the file's key at any depth, so a converted smaller model with a window runs as its config says.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

constexpr int32_t kExaone4SwaPeriod = 4;
constexpr int32_t kLayersOf32B = 64;
constexpr int32_t kWindowOf32B = 4096;
constexpr const char* kExaone4RopeFreqBaseSwa = "rope.freq_base_swa";

// Post-norms only; with a window, the full layers skip RoPE.
void set_exaone4_switches(ModelConfig& c) {
  c.pre_norms = false;
  c.post_norms = true;
  c.layer_skips_rope.clear();
  if (c.sliding_window > 0)
    for (int32_t l = 0; l < c.num_layers; ++l) c.layer_skips_rope.push_back(!c.is_swa_layer(l));
}

Status read_exaone4_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > uint32_t(Limits::kMaxContextLength))
    return make_error(fmt::format("{}: exaone4.attention.sliding_window = {} is out of range", file.name(), *window));
  c.sliding_window = window ? int32_t(*window) : (c.num_layers == kLayersOf32B ? kWindowOf32B : 0);
  if (c.sliding_window > 0) {
    PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, kExaone4SwaPeriod, c));
    PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, kExaone4RopeFreqBaseSwa));
    if (base_swa) c.rope_theta_swa = *base_swa;
  }
  set_exaone4_switches(c);
  return Status::ok_status();
}

void write_exaone4_gguf(const ModelConfig& c, format::GgufWriter& w) {
  if (c.sliding_window <= 0) return;
  w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  write_gguf_swa_layers(c, w);
}

// sliding_window with layer_types, or sliding_window_pattern as a period or a string such as "LLLG" (llama.cpp's
// converter reads all three).
Status read_exaone4_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.int_or("sliding_window", 0, Limits::kMaxContextLength));
  if (c.sliding_window > 0) {
    if (f.has("layer_types")) {
      PAGODA_RETURN_IF_ERROR(read_hf_layer_types(f, c));
    } else if (f.has("sliding_window_pattern") && f.json()["sliding_window_pattern"].is_string()) {
      const std::string pattern = f.json()["sliding_window_pattern"].get<std::string>();
      if (pattern.empty() || pattern.find_first_not_of("LG") != std::string::npos)
        return f.error(fmt::format("sliding_window_pattern \"{}\" must be letters L and G", pattern));
      for (int32_t l = 0; l < c.num_layers; ++l) c.layer_is_swa.push_back(pattern[size_t(l) % pattern.size()] == 'L');
    } else {
      PAGODA_ASSIGN_OR_RETURN(int32_t period, f.int_or("sliding_window_pattern", kExaone4SwaPeriod, Limits::kMaxBlockCount));
      c.layer_is_swa = swa_pattern_of_period(c.num_layers, period);
    }
  }
  set_exaone4_switches(c);
  return Status::ok_status();
}

void write_exaone4_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "exaone4";
  j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  if (c.sliding_window > 0) {
    nlohmann::ordered_json types = nlohmann::ordered_json::array();
    for (int32_t l = 0; l < c.num_layers; ++l)
      types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
    j["layer_types"] = std::move(types);
  }
}

void exaone4_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim, head = c.head_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  const auto add = [&](const char* hf, const char* gguf, std::vector<int64_t> shape, const char* fields, Kind kind) {
    out.push_back({p + hf, {}, format::gguf_tensor::block_tensor(layer, gguf), std::move(shape), fields, kind});
  };
  using namespace format::gguf_tensor;
  add("self_attn.q_proj.weight", kAttnQ, {q_dim, dim}, "num_attention_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.k_proj.weight", kAttnK, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.v_proj.weight", kAttnV, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size", Kind::kMatrix);
  add("self_attn.q_norm.weight", kAttnQNorm, {head}, "head_dim", Kind::kNorm);
  add("self_attn.k_norm.weight", kAttnKNorm, {head}, "head_dim", Kind::kNorm);
  add("self_attn.o_proj.weight", kAttnOutput, {dim, q_dim}, "hidden_size, num_attention_heads * head_dim",
      Kind::kMatrix);
  add("post_attention_layernorm.weight", kPostAttentionNorm, {dim}, "hidden_size", Kind::kNorm);
  add("mlp.gate_proj.weight", kFfnGate, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("mlp.up_proj.weight", kFfnUp, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("mlp.down_proj.weight", kFfnDown, {dim, hidden}, "hidden_size, intermediate_size", Kind::kMatrix);
  add("post_feedforward_layernorm.weight", kPostFfwNorm, {dim}, "hidden_size", Kind::kNorm);
}

}  // namespace

extern const ArchitectureFamily kExaone4Family{"exaone4", true, read_exaone4_gguf, write_exaone4_gguf};
extern const HfFamily kExaone4Hf{"Exaone4ForCausalLM", "exaone4", "", read_exaone4_config, write_exaone4_config,
                                 exaone4_layer_tensors};

}  // namespace pagoda
