// The Gemma families, gemma2 and gemma3: GeGLU (GELU, tanh approximation), embeddings scaled by sqrt(dim), RMSNorm
// by (1 + w) (GGUF stores w + 1, so the model multiplies by the stored weight as usual), an RMSNorm after
// attention and after the FFN before each residual add, alternating sliding-window and full-attention layers
// (Gemma 2: every other layer, window 4096; Gemma 3: five windowed layers then one full, window 512, a local RoPE
// base of 10000 unscaled while the full layers may take linear scaling), the query scaled by
// query_pre_attn_scalar^-0.5, attention logits soft-capped (Gemma 2) and final logits soft-capped (Gemma 2; Gemma 3
// when set), per-head Q/K RMSNorm (Gemma 3), tied embeddings.
// The attention scale in GGUF: llama.cpp derives it from the model size (1 / sqrt(hidden / heads) for the 27B
// models, 46 or 62 blocks; else 1 / sqrt(head_dim)); pagoda's converter also writes <arch>.attention.scale, read
// when present.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

// The family's own GGUF keys, under "<arch>." (gguf_key::arch_key).
constexpr const char* kAttnLogitSoftcapping = "attn_logit_softcapping";  // Gemma 2
constexpr const char* kFinalLogitSoftcapping = "final_logit_softcapping";
constexpr const char* kRopeFreqBaseSwa = "rope.freq_base_swa";  // the windowed layers' RoPE base

using Limits = ModelConfigLimits;

constexpr int32_t kGemma2SwaPeriod = 2;
constexpr int32_t kGemma3SwaPeriod = 6;

// The parts both generations share; `num_layers_27b`: the block count llama.cpp takes for the 27B size.
Status read_gemma_common(const format::GgufFile& file, ModelConfig& c, int32_t num_layers_27b) {
  c.activation = FfnActivation::kGeluTanh;
  c.embedding_scale = std::sqrt(float(c.dim));
  c.post_norms = true;
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> scale, gguf_arch_f32(file, c, family_key::kAttentionScale));
  if (scale) {
    if (!(*scale > 0.0f) || !std::isfinite(*scale))
      return make_error(fmt::format("{}: {}.attention.scale must be positive", file.name(), c.architecture));
    c.attention_scale = *scale;
  } else {
    c.attention_scale = c.num_layers == num_layers_27b ? 1.0f / std::sqrt(float(c.dim / c.num_heads))
                                                       : 1.0f / std::sqrt(float(c.head_dim));
  }
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> final_cap, gguf_arch_f32(file, c, kFinalLogitSoftcapping));
  if (final_cap && (!(*final_cap >= 0.0f) || !std::isfinite(*final_cap)))
    return make_error(fmt::format("{}: {}.final_logit_softcapping must be non-negative", file.name(), c.architecture));
  if (final_cap) c.final_softcap = *final_cap;
  return Status::ok_status();
}

Result<int32_t> read_window(const format::GgufFile& file, const ModelConfig& c, uint32_t fallback) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  const uint32_t w = window.value_or(fallback);
  if (w > uint32_t(Limits::kMaxContextLength))
    return make_error(
        fmt::format("{}: {}.attention.sliding_window = {} is out of range", file.name(), c.architecture, w));
  return int32_t(w);
}

Status read_gemma2_gguf(const format::GgufFile& file, ModelConfig& c) {
  c.final_softcap = 30.0f;  // llama.cpp's defaults when the keys are absent
  c.attn_softcap = 50.0f;
  PAGODA_RETURN_IF_ERROR(read_gemma_common(file, c, 46));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> attn_cap, gguf_arch_f32(file, c, kAttnLogitSoftcapping));
  if (attn_cap && (!(*attn_cap >= 0.0f) || !std::isfinite(*attn_cap)))
    return make_error(fmt::format("{}: gemma2.attn_logit_softcapping must be non-negative", file.name()));
  if (attn_cap) c.attn_softcap = *attn_cap;
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, read_window(file, c, 4096));
  PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, kGemma2SwaPeriod, c));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, kRopeFreqBaseSwa));
  if (base_swa) c.rope_theta_swa = *base_swa;  // else the full layers' base and scale, as llama.cpp's gemma2
  return Status::ok_status();
}

Status read_gemma3_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gemma_common(file, c, 62));
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, read_window(file, c, 0));
  if (c.sliding_window > 0) {
    PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, kGemma3SwaPeriod, c));
    PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, kRopeFreqBaseSwa));
    c.rope_theta_swa = base_swa.value_or(10000.0f);
    c.rope_freq_scale_swa = 1.0f;  // the local layers are never scaled
  }
  return Status::ok_status();
}

void write_gemma_common(const ModelConfig& c, format::GgufWriter& w, int32_t period) {
  w.set(arch_key(c, family_key::kAttentionScale), format::GgufValue::f32(c.attention_scale));
  if (c.final_softcap > 0.0f) w.set(arch_key(c, kFinalLogitSoftcapping), format::GgufValue::f32(c.final_softcap));
  if (c.sliding_window > 0) {
    w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
    write_gguf_swa_pattern(c, period, w);
  }
  if (c.rope_theta_swa > 0.0f) w.set(arch_key(c, kRopeFreqBaseSwa), format::GgufValue::f32(c.rope_theta_swa));
}

void write_gemma2_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gemma_common(c, w, kGemma2SwaPeriod);
  w.set(arch_key(c, kAttnLogitSoftcapping), format::GgufValue::f32(c.attn_softcap));
  w.set(arch_key(c, kFinalLogitSoftcapping), format::GgufValue::f32(c.final_softcap));
}

void write_gemma3_gguf(const ModelConfig& c, format::GgufWriter& w) { write_gemma_common(c, w, kGemma3SwaPeriod); }

// config.json: the fields both generations share.
Status read_gemma_config(const HfConfigFields& f, HfConfig& h, int32_t default_period) {
  ModelConfig& c = h.config;
  h.norms_plus_one = true;
  PAGODA_ASSIGN_OR_RETURN(h.tie_word_embeddings, f.bool_or("tie_word_embeddings", true));
  if (!h.tie_word_embeddings) return f.error("tie_word_embeddings must be true for Gemma (no lm_head)");
  c.activation = FfnActivation::kGeluTanh;
  c.embedding_scale = std::sqrt(float(c.dim));
  c.post_norms = true;
  // Gemma 2's config holds both; hidden_activation wins, as in transformers.
  const char* act_key = f.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  PAGODA_ASSIGN_OR_RETURN(const std::string act, f.string_or(act_key, "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    return f.error(fmt::format("{} \"{}\" is not supported (gelu_pytorch_tanh)", act_key, act));
  PAGODA_ASSIGN_OR_RETURN(double qpas, f.positive_number_or("query_pre_attn_scalar", double(c.head_dim)));
  c.attention_scale = float(1.0 / std::sqrt(qpas));
  PAGODA_ASSIGN_OR_RETURN(double final_cap, f.positive_number_or("final_logit_softcapping", 0.0));
  c.final_softcap = float(final_cap);
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.int_or("sliding_window", 0, Limits::kMaxContextLength));
  if (c.sliding_window > 0) {
    if (f.has("layer_types")) {
      PAGODA_RETURN_IF_ERROR(read_hf_layer_types(f, c));
    } else {
      PAGODA_ASSIGN_OR_RETURN(int32_t period,
                              f.int_or("sliding_window_pattern", default_period, Limits::kMaxBlockCount));
      c.layer_is_swa = swa_pattern_of_period(c.num_layers, period);
    }
  }
  return Status::ok_status();
}

Status read_gemma2_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_gemma_config(f, h, kGemma2SwaPeriod));
  PAGODA_ASSIGN_OR_RETURN(double attn_cap, f.positive_number_or("attn_logit_softcapping", 0.0));
  h.config.attn_softcap = float(attn_cap);
  return Status::ok_status();
}

Status read_gemma3_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_gemma_config(f, h, kGemma3SwaPeriod));
  ModelConfig& c = h.config;
  h.qk_norm = true;
  if (f.has("attn_logit_softcapping")) return f.error("attn_logit_softcapping is not part of Gemma 3");
  if (c.sliding_window > 0) {
    PAGODA_ASSIGN_OR_RETURN(double local_base, f.positive_number_or("rope_local_base_freq", 10000.0));
    c.rope_theta_swa = float(local_base);
    c.rope_freq_scale_swa = 1.0f;
  }
  if (f.has("rope_scaling")) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rs, f.object("rope_scaling"));
    PAGODA_ASSIGN_OR_RETURN(const std::string type, rs.rope_type());
    if (type == "linear") {
      PAGODA_ASSIGN_OR_RETURN(double factor, rs.positive_number_or("factor", 1.0));
      c.rope_freq_scale = float(1.0 / factor);
    }
  }
  return Status::ok_status();
}

void write_gemma_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["query_pre_attn_scalar"] = 1.0 / (double(c.attention_scale) * double(c.attention_scale));
  j["final_logit_softcapping"] = c.final_softcap > 0.0f ? nlohmann::ordered_json(c.final_softcap) : nullptr;
  j["tie_word_embeddings"] = true;
  j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  if (c.sliding_window > 0) {
    nlohmann::ordered_json types = nlohmann::ordered_json::array();
    for (int32_t l = 0; l < c.num_layers; ++l)
      types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
    j["layer_types"] = std::move(types);
  }
}

void write_gemma2_config(const HfConfig& h, nlohmann::ordered_json& j) {
  write_gemma_config(h, j);
  j["model_type"] = "gemma2";
  j["attn_logit_softcapping"] = h.config.attn_softcap > 0.0f ? nlohmann::ordered_json(h.config.attn_softcap) : nullptr;
}

void write_gemma3_config(const HfConfig& h, nlohmann::ordered_json& j) {
  write_gemma_config(h, j);
  const ModelConfig& c = h.config;
  j["model_type"] = "gemma3_text";
  if (c.rope_theta_swa > 0.0f) j["rope_local_base_freq"] = c.rope_theta_swa;
  if (c.rope_freq_scale != 1.0f) j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0 / c.rope_freq_scale}};
}

// Attention as Llama's (Gemma 3 adds the Q/K norms); then the post-attention norm, and the FFN between its two
// norms: HF's post_attention_layernorm is Gemma's attention output norm, pre_feedforward_layernorm the FFN's input
// norm.
void gemma_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  append_hf_attention_tensors(h, layer, out);
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "post_attention_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kPostAttentionNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm,
                 Rewrite::kAddOne});
  out.push_back({p + "pre_feedforward_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm,
                 Rewrite::kAddOne});
  out.push_back({p + "mlp.gate_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnGate),
                 {hidden, dim},
                 "intermediate_size, hidden_size"});
  out.push_back({p + "mlp.up_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnUp),
                 {hidden, dim},
                 "intermediate_size, hidden_size"});
  out.push_back({p + "mlp.down_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnDown),
                 {dim, hidden},
                 "hidden_size, intermediate_size"});
  out.push_back({p + "post_feedforward_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kPostFfwNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm,
                 Rewrite::kAddOne});
}

}  // namespace

extern const ArchitectureFamily kGemma2Family{"gemma2", true, read_gemma2_gguf, write_gemma2_gguf};
extern const ArchitectureFamily kGemma3Family{"gemma3", true, read_gemma3_gguf, write_gemma3_gguf};

extern const HfFamily kGemma2Hf{"Gemma2ForCausalLM", "gemma2",           "", read_gemma2_config,
                                write_gemma2_config, gemma_layer_tensors};
extern const HfFamily kGemma3Hf{"Gemma3ForCausalLM", "gemma3",           "linear", read_gemma3_config,
                                write_gemma3_config, gemma_layer_tensors};

}  // namespace pagoda
