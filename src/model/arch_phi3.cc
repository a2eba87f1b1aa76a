// The phi3 family (Phi-3, Phi-3.5, Phi-4): Llama's block with Q, K and V in one matrix (attn_qkv) and gate and up in
// one (ffn_up of 2 * feed_forward_length rows, gate first), NeoX RoPE (possibly on a part of each head:
// Phi-4-mini's partial_rotary_factor), LongRoPE for the 128k-context models: per-pair frequency divisors
// (rope_factors_long / rope_factors_short), the long set when the configured context exceeds
// phi3.rope.scaling.original_context_length (model/rope_tables.h), and cos/sin scaled by
// phi3.rope.scaling.attn_factor.
// phi3.attention.sliding_window (Phi-3-mini's 2047) is honoured as the HF model does (llama.cpp switches it off);
// 0 means none.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

// LongRoPE's switch point and magnitude are the common rope.scaling.original_context_length and attn_factor,
// read with the common keys (model_config.cc).
constexpr const char* kRopeScalingOriginalContext = gguf_key::kRopeScalingOriginalContext;
constexpr const char* kRopeScalingAttnFactor = gguf_key::kRopeScalingAttnFactor;

using Limits = ModelConfigLimits;

Result<std::vector<float>> rope_factors(const format::GgufFile& file, const ModelConfig& c, const char* name) {
  const format::GgufTensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return std::vector<float>();
  if (t->type != format::GgmlType::kF32 || t->dims != std::vector<int64_t>{c.rope_dim / 2})
    return make_error(fmt::format("{}: {} must be f32 [{}]", file.name(), name, c.rope_dim / 2));
  const float* v = static_cast<const float*>(t->data);
  for (int32_t i = 0; i < c.rope_dim / 2; ++i)
    if (!(v[i] > 0.0f) || !std::isfinite(v[i]))
      return make_error(fmt::format("{}: {}[{}] = {} must be positive", file.name(), name, i, v[i]));
  return std::vector<float>(v, v + c.rope_dim / 2);
}

Status read_phi3_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.rope_long_factors, rope_factors(file, c, "rope_factors_long.weight"));
  PAGODA_ASSIGN_OR_RETURN(c.rope_short_factors, rope_factors(file, c, "rope_factors_short.weight"));
  if (c.rope_long_factors.empty() != c.rope_short_factors.empty())
    return make_error(
        fmt::format("{}: rope_factors_long.weight and rope_factors_short.weight come together", file.name()));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > uint32_t(Limits::kMaxContextLength))
    return make_error(fmt::format("{}: phi3.attention.sliding_window = {} is out of range", file.name(), *window));
  c.sliding_window = int32_t(window.value_or(0));
  return Status::ok_status();
}

void write_phi3_gguf(const ModelConfig& c, format::GgufWriter& w) {
  w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  if (c.rope_original_context > 0)
    w.set(arch_key(c, kRopeScalingOriginalContext), format::GgufValue::u32(uint32_t(c.rope_original_context)));
  if (!c.rope_long_factors.empty())
    w.set(arch_key(c, kRopeScalingAttnFactor), format::GgufValue::f32(c.rope_attn_factor));
}

Status read_phi3_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(double partial, f.positive_number_or("partial_rotary_factor", 1.0, 1.0));
  c.rope_dim = int32_t(partial * double(c.dim)) / c.num_heads;
  if (c.rope_dim < 2 || c.rope_dim % 2 != 0 || c.rope_dim > c.head_dim)
    return f.error(fmt::format("partial_rotary_factor {} gives {} rotated dims per head, not even in 2..{}", partial,
                               c.rope_dim, c.head_dim));
  PAGODA_ASSIGN_OR_RETURN(
      c.rope_original_context,
      f.positive_int_or("original_max_position_embeddings", h.max_position_embeddings, Limits::kMaxContextLength));
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.int_or("sliding_window", 0, Limits::kMaxContextLength));
  if (f.has("rope_scaling")) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rs, f.object("rope_scaling"));
    PAGODA_ASSIGN_OR_RETURN(const std::string type, rs.rope_type());
    if (type == "longrope" || type == "su") {
      PAGODA_ASSIGN_OR_RETURN(c.rope_long_factors, rs.positive_numbers("long_factor", size_t(c.rope_dim / 2)));
      PAGODA_ASSIGN_OR_RETURN(c.rope_short_factors, rs.positive_numbers("short_factor", size_t(c.rope_dim / 2)));
      const double scale = double(h.max_position_embeddings) / double(c.rope_original_context);
      const double derived =
          scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(c.rope_original_context))) : 1.0;
      PAGODA_ASSIGN_OR_RETURN(double attn_factor, rs.positive_number_or("attention_factor", derived));
      c.rope_attn_factor = float(attn_factor);
      c.rope_scaling = RopeScalingType::kLongRope;
    }
  }
  return Status::ok_status();
}

void write_phi3_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "phi3";
  j["original_max_position_embeddings"] = c.rope_original_context;
  j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  if (c.rope_dim != c.head_dim) j["partial_rotary_factor"] = double(c.rope_dim) / double(c.head_dim);
  if (!c.rope_long_factors.empty())
    j["rope_scaling"] = {
        {"type", "longrope"}, {"long_factor", c.rope_long_factors}, {"short_factor", c.rope_short_factors}};
}

void phi3_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, qkv = c.q_dim() + 2 * int64_t(c.kv_dim()), hidden = c.hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "input_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm});
  out.push_back({p + "self_attn.qkv_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnQkv),
                 {qkv, dim},
                 "(num_attention_heads + 2 * num_key_value_heads) * head_dim, hidden_size"});
  out.push_back({p + "self_attn.o_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnOutput),
                 {dim, c.q_dim()},
                 "hidden_size, num_attention_heads * head_dim"});
  out.push_back({p + "post_attention_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm});
  out.push_back({p + "mlp.gate_up_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnUp),
                 {2 * hidden, dim},
                 "2 * intermediate_size, hidden_size"});
  out.push_back({p + "mlp.down_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnDown),
                 {dim, hidden},
                 "hidden_size, intermediate_size"});
}

}  // namespace

extern const ArchitectureFamily kPhi3Family{"phi3", true, read_phi3_gguf, write_phi3_gguf};
extern const HfFamily kPhi3Hf{"Phi3ForCausalLM", "phi3", "longrope su", read_phi3_config, write_phi3_config,
                              phi3_layer_tensors};

}  // namespace pagoda
