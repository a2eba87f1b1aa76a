// The granite family (Granite 3.x dense): Llama's block with four multipliers: the embedding (granite.embedding_scale),
// the attention scores (granite.attention.scale, instead of 1 / sqrt(head_dim)), each block's output before its
// residual add (granite.residual_scale), and the logits, divided by granite.logit_scale.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

// The family's own GGUF keys, under "<arch>." (gguf_key::arch_key).
constexpr const char* kLogitScale = "logit_scale";
constexpr const char* kResidualScale = "residual_scale";
constexpr const char* kEmbeddingScale = "embedding_scale";

Result<float> positive_key(const format::GgufFile& file, const ModelConfig& c, const char* suffix, bool required) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> v, gguf_arch_f32(file, c, suffix));
  if (!v && required)
    return make_error(fmt::format("{}: missing metadata key {}.{}", file.name(), c.architecture, suffix));
  if (v && (!(*v > 0.0f) || !std::isfinite(*v)))
    return make_error(fmt::format("{}: {}.{} = {} must be positive", file.name(), c.architecture, suffix, *v));
  return v.value_or(0.0f);
}

Status read_granite_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.logit_scale, positive_key(file, c, kLogitScale, true));
  PAGODA_ASSIGN_OR_RETURN(c.residual_scale, positive_key(file, c, kResidualScale, false));
  PAGODA_ASSIGN_OR_RETURN(c.embedding_scale, positive_key(file, c, kEmbeddingScale, false));
  PAGODA_ASSIGN_OR_RETURN(c.attention_scale, positive_key(file, c, family_key::kAttentionScale, false));
  return Status::ok_status();
}

void write_granite_gguf(const ModelConfig& c, format::GgufWriter& w) {
  w.set(arch_key(c, kLogitScale), format::GgufValue::f32(c.logit_scale > 0.0f ? c.logit_scale : 1.0f));
  if (c.residual_scale > 0.0f) w.set(arch_key(c, kResidualScale), format::GgufValue::f32(c.residual_scale));
  if (c.embedding_scale > 0.0f) w.set(arch_key(c, kEmbeddingScale), format::GgufValue::f32(c.embedding_scale));
  if (c.attention_scale > 0.0f)
    w.set(arch_key(c, family_key::kAttentionScale), format::GgufValue::f32(c.attention_scale));
}

Status read_granite_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  // llama.cpp's converter ignores head_dim for Granite (hidden_size / heads it is).
  if (c.head_dim * c.num_heads != c.dim)
    return f.error(fmt::format("head_dim {} must be hidden_size / num_attention_heads for Granite", c.head_dim));
  PAGODA_ASSIGN_OR_RETURN(double embedding, f.positive_number_or("embedding_multiplier", 1.0));
  PAGODA_ASSIGN_OR_RETURN(double attention,
                          f.positive_number_or("attention_multiplier", 1.0 / std::sqrt(double(c.head_dim))));
  PAGODA_ASSIGN_OR_RETURN(double residual, f.positive_number_or("residual_multiplier", 1.0));
  PAGODA_ASSIGN_OR_RETURN(double logits, f.positive_number_or("logits_scaling", 1.0));
  c.embedding_scale = float(embedding);
  c.attention_scale = float(attention);
  c.residual_scale = float(residual);
  c.logit_scale = float(logits);
  PAGODA_ASSIGN_OR_RETURN(bool mlp_bias, f.bool_or("mlp_bias", false));
  if (mlp_bias) return f.error("mlp_bias: true is not supported");
  return Status::ok_status();
}

void write_granite_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "granite";
  j["embedding_multiplier"] = c.embedding_scale;
  j["attention_multiplier"] = c.attention_scale;
  j["residual_multiplier"] = c.residual_scale;
  j["logits_scaling"] = c.logit_scale;
  j["mlp_bias"] = false;
}

void granite_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_dense_ffn_tensors(h, layer, out);
}

}  // namespace

extern const ArchitectureFamily kGraniteFamily{"granite", false, read_granite_gguf, write_granite_gguf};
extern const HfFamily kGraniteHf{"GraniteForCausalLM", "granite", "", read_granite_config, write_granite_config,
                                 granite_layer_tensors};

}  // namespace pagoda
