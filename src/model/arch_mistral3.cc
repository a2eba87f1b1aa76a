// The mistral3 family (Ministral 3's text model): Llama's block (adjacent-pair RoPE on permuted Q/K rows, GQA) with
// YaRN RoPE scaling (its betas and mscale_all_dim as rope.scaling.yarn_beta_fast/slow and yarn_log_multiplier, read
// with the common RoPE keys) and Llama 4's attention temperature: mistral3.attention.temperature_scale (config.json's
// rope_parameters.llama_4_scaling_beta) scales each query by 1 + beta * ln(1 + floor(p / original context)).
// Dense only (llama.cpp's mistral3 MoE variant is refused: no expert keys are read).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

constexpr const char* kTemperatureScale = "attention.temperature_scale";

Status read_mistral3_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> experts, gguf_arch_u32(file, c, family_key::kExpertCount));
  if (experts && *experts > 0)
    return make_error(fmt::format("{}: mistral3.expert_count = {}: the mixture-of-experts mistral3 is not supported",
                                  file.name(), *experts));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> scale, gguf_arch_f32(file, c, kTemperatureScale));
  if (scale && (!std::isfinite(*scale) || *scale < 0.0f))
    return make_error(fmt::format("{}: mistral3.{} = {} must be finite and non-negative", file.name(),
                                  kTemperatureScale, *scale));
  c.attn_temperature_scale = scale.value_or(0.0f);
  return Status::ok_status();
}

void write_mistral3_gguf(const ModelConfig& c, format::GgufWriter& w) {
  if (c.attn_temperature_scale != 0.0f) w.set(arch_key(c, kTemperatureScale), format::GgufValue::f32(c.attn_temperature_scale));
}

Status read_ministral3_config(const HfConfigFields& f, HfConfig& h) {
  const char* field = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!f.has(field)) return Status::ok_status();
  PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rs, f.object(field));
  if (rs.has("llama_4_scaling_beta")) {
    PAGODA_ASSIGN_OR_RETURN(const double beta, rs.positive_number_or("llama_4_scaling_beta", 0.1));
    h.config.attn_temperature_scale = float(beta);
  }
  return Status::ok_status();
}

void write_ministral3_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "ministral3";
  if (h.config.attn_temperature_scale != 0.0f && j["rope_scaling"].is_object())
    j["rope_scaling"]["llama_4_scaling_beta"] = h.config.attn_temperature_scale;
}

void mistral3_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_dense_ffn_tensors(h, layer, out);
}

}  // namespace

extern const ArchitectureFamily kMistral3Family{"mistral3", false, read_mistral3_gguf, write_mistral3_gguf};
extern const HfFamily kMinistral3Hf{"Ministral3ForCausalLM", "mistral3", "", read_ministral3_config,
                                    write_ministral3_config, mistral3_layer_tensors};

}  // namespace pagoda
