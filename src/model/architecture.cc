// The family tables, and the helpers the family files share.
#include "model/architecture.h"

#include <fmt/format.h>

#include <cmath>

#include "format/gguf_names.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {

// Defined in the family files.
extern const ArchitectureFamily kLlamaFamily, kQwen2Family, kQwen2MoeFamily, kQwen3Family, kQwen3MoeFamily,
    kGemma2Family, kGemma3Family, kGemma4Family, kPhi3Family, kGraniteFamily, kSmolLm3Family, kOlmo2Family,
    kMistral3Family, kExaone4Family, kLfm2Family, kGptOssFamily, kBertFamily, kJinaBertV2Family, kNomicBertFamily,
    kQwen35Family, kQwen35MoeFamily, kQwen3NextFamily, kDeepseek2Family;
extern const HfFamily kLlamaHf, kMistralHf, kMixtralHf, kQwen2Hf, kQwen2MoeHf, kQwen3Hf, kQwen3MoeHf, kGemma2Hf,
    kGemma3Hf, kGemma4Hf, kPhi3Hf, kGraniteHf, kSmolLm3Hf, kOlmo2Hf, kOlmo3Hf, kMinistral3Hf, kExaone4Hf, kLfm2Hf,
    kGptOssHf, kQwen35Hf, kQwen35MoeHf, kQwen3NextHf;

namespace {

const ArchitectureFamily* const kFamilies[] = {
    &kLlamaFamily,     &kQwen2Family,   &kQwen2MoeFamily, &kQwen3Family,   &kQwen3MoeFamily, &kGemma2Family,
    &kGemma3Family,    &kGemma4Family,  &kPhi3Family,     &kGraniteFamily, &kSmolLm3Family,  &kOlmo2Family,
    &kMistral3Family,  &kExaone4Family, &kLfm2Family,     &kGptOssFamily,  &kBertFamily,     &kJinaBertV2Family,
    &kNomicBertFamily, &kQwen35Family,  &kQwen35MoeFamily, &kQwen3NextFamily, &kDeepseek2Family};
const HfFamily* const kHfFamilies[] = {&kLlamaHf,    &kMistralHf, &kMixtralHf, &kQwen2Hf, &kQwen2MoeHf, &kQwen3Hf,
                                       &kQwen3MoeHf, &kGemma2Hf,  &kGemma3Hf,  &kGemma4Hf, &kPhi3Hf,  &kGraniteHf,
                                       &kSmolLm3Hf,  &kOlmo2Hf,   &kOlmo3Hf,   &kMinistral3Hf, &kExaone4Hf, &kLfm2Hf,
                                       &kGptOssHf, &kQwen35Hf, &kQwen35MoeHf, &kQwen3NextHf};

}  // namespace

const ArchitectureFamily* find_architecture(std::string_view gguf_name) {
  for (const ArchitectureFamily* f : kFamilies)
    if (f->gguf_name == gguf_name) return f;
  return nullptr;
}

const HfFamily* find_hf_family(std::string_view hf_architecture) {
  for (const HfFamily* f : kHfFamilies)
    if (f->hf_architecture == hf_architecture) return f;
  return nullptr;
}

const HfFamily* find_multimodal_hf_family(std::string_view hf_architecture) {
  for (const HfFamily* f : kHfFamilies)
    if (!f->multimodal_architecture.empty() && f->multimodal_architecture == hf_architecture) return f;
  return nullptr;
}

std::string supported_architecture_names() {
  std::string names;
  for (const ArchitectureFamily* f : kFamilies) names += (names.empty() ? "" : ", ") + std::string(f->gguf_name);
  return names;
}

std::string supported_hf_architecture_names() {
  std::string names;
  for (const HfFamily* f : kHfFamilies) {
    names += (names.empty() ? "" : ", ") + std::string(f->hf_architecture);
    if (!f->multimodal_architecture.empty()) names += ", " + std::string(f->multimodal_architecture);
  }
  return names;
}

void append_hf_attention_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const std::string p = fmt::format("model.layers.{}.", layer);
  const Rewrite rq = h.permute_qk ? Rewrite::kPermuteQ : Rewrite::kNone;
  const Rewrite rk = h.permute_qk ? Rewrite::kPermuteK : Rewrite::kNone;
  const Rewrite norm = h.norms_plus_one ? Rewrite::kAddOne : Rewrite::kNone;  // Gemma's (1 + w) norms
  out.push_back({p + "input_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm,
                 norm});
  out.push_back({p + "self_attn.q_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnQ),
                 {q_dim, dim},
                 "num_attention_heads * head_dim, hidden_size",
                 Kind::kMatrix,
                 rq});
  out.push_back({p + "self_attn.k_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnK),
                 {kv_dim, dim},
                 "num_key_value_heads * head_dim, hidden_size",
                 Kind::kMatrix,
                 rk});
  out.push_back({p + "self_attn.v_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnV),
                 {kv_dim, dim},
                 "num_key_value_heads * head_dim, hidden_size",
                 Kind::kMatrix,
                 Rewrite::kNone});
  if (h.qkv_bias) {
    out.push_back({p + "self_attn.q_proj.bias",
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnQ, "bias"),
                   {q_dim},
                   "num_attention_heads * head_dim",
                   Kind::kBias,
                   rq});
    out.push_back({p + "self_attn.k_proj.bias",
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnK, "bias"),
                   {kv_dim},
                   "num_key_value_heads * head_dim",
                   Kind::kBias,
                   rk});
    out.push_back({p + "self_attn.v_proj.bias",
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnV, "bias"),
                   {kv_dim},
                   "num_key_value_heads * head_dim",
                   Kind::kBias,
                   Rewrite::kNone});
  }
  if (h.qk_norm) {
    out.push_back({p + "self_attn.q_norm.weight",
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnQNorm),
                   {c.head_dim},
                   "head_dim",
                   Kind::kNorm,
                   norm});
    out.push_back({p + "self_attn.k_norm.weight",
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnKNorm),
                   {c.head_dim},
                   "head_dim",
                   Kind::kNorm,
                   norm});
  }
  out.push_back({p + "self_attn.o_proj.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kAttnOutput),
                 {dim, q_dim},
                 "hidden_size, num_attention_heads * head_dim",
                 Kind::kMatrix,
                 Rewrite::kNone});
}

void append_hf_dense_ffn_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "post_attention_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm});
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
}

void append_hf_moe_tensors(const HfConfig& h, int32_t layer, const std::string& router,
                           const std::string& expert_format, const char* gate, const char* up, const char* down,
                           std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, hidden = c.expert_hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "post_attention_layernorm.weight",
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnNorm),
                 {dim},
                 "hidden_size",
                 Kind::kNorm});
  out.push_back({p + router,
                 {},
                 format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnGateInp),
                 {c.num_experts, dim},
                 "num_experts, hidden_size"});
  const auto stacked = [&](const char* proj, const char* gguf, std::vector<int64_t> shape, const char* fields) {
    HfTensor t{"", {}, format::gguf_tensor::block_tensor(layer, gguf), std::move(shape), fields, Kind::kMatrix};
    for (int32_t e = 0; e < c.num_experts; ++e)
      t.hf_slices.push_back(p +
                            fmt::format(fmt::runtime(expert_format), fmt::arg("expert", e), fmt::arg("proj", proj)));
    out.push_back(std::move(t));
  };
  stacked(gate, format::gguf_tensor::kFfnGateExps, {hidden, dim}, "expert intermediate size, hidden_size");
  stacked(down, format::gguf_tensor::kFfnDownExps, {dim, hidden}, "hidden_size, expert intermediate size");
  stacked(up, format::gguf_tensor::kFfnUpExps, {hidden, dim}, "expert intermediate size, hidden_size");
}

void append_hf_shared_expert_tensors(const HfConfig& h, int32_t layer, const std::string& expert_format,
                                     const char* gate, const char* up, const char* down, const std::string& gate_vector,
                                     std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, hidden = c.shared_expert_hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  const auto matrix = [&](const char* proj, const char* gguf, std::vector<int64_t> shape, const char* fields) {
    out.push_back({p + fmt::format(fmt::runtime(expert_format), fmt::arg("proj", proj)),
                   {},
                   format::gguf_tensor::block_tensor(layer, gguf),
                   std::move(shape),
                   fields,
                   Kind::kMatrix});
  };
  if (c.shared_expert_gated)
    out.push_back({p + gate_vector,
                   {},
                   format::gguf_tensor::block_tensor(layer, format::gguf_tensor::kFfnGateInpShexp),
                   {1, dim},
                   "1, hidden_size",
                   Kind::kBias,
                   HfTensor::Rewrite::kToF32});
  matrix(gate, format::gguf_tensor::kFfnGateShexp, {hidden, dim}, "shared expert intermediate size, hidden_size");
  matrix(up, format::gguf_tensor::kFfnUpShexp, {hidden, dim}, "shared expert intermediate size, hidden_size");
  matrix(down, format::gguf_tensor::kFfnDownShexp, {dim, hidden}, "hidden_size, shared expert intermediate size");
}

Result<std::optional<float>> gguf_arch_f32(const format::GgufFile& file, const ModelConfig& c, const char* suffix) {
  return file.get_f32(arch_key(c, suffix));
}

Result<std::optional<uint32_t>> gguf_arch_u32(const format::GgufFile& file, const ModelConfig& c, const char* suffix) {
  return file.get_u32(arch_key(c, suffix));
}

std::vector<uint8_t> swa_pattern_of_period(int32_t num_layers, int32_t period) {
  std::vector<uint8_t> out(static_cast<size_t>(num_layers));
  for (int32_t l = 0; l < num_layers; ++l) out[size_t(l)] = period == 0 || l % period < period - 1;
  return out;
}

Status read_gguf_swa_pattern(const format::GgufFile& file, int32_t default_period, ModelConfig& c) {
  const std::string key = arch_key(c, family_key::kSlidingWindowPattern);
  const format::GgufValue* v = file.find(key);
  if (v == nullptr) {
    c.layer_is_swa = swa_pattern_of_period(c.num_layers, default_period);
    return Status::ok_status();
  }
  if (v->type == format::GgufValueType::kArray) {
    if (v->array.size() < size_t(c.num_layers))
      return make_error(
          fmt::format("{}: {} has {} entries for {} layers", file.name(), key, v->array.size(), c.num_layers));
    c.layer_is_swa.clear();
    for (int32_t l = 0; l < c.num_layers; ++l) {
      const format::GgufValue& e = v->array[size_t(l)];
      if (e.type == format::GgufValueType::kArray || e.type == format::GgufValueType::kString)
        return make_error(fmt::format("{}: {} must hold booleans", file.name(), key));
      c.layer_is_swa.push_back(e.u64 != 0 || e.i64 != 0);
    }
    return Status::ok_status();
  }
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> period, file.get_u32(key));
  if (*period > uint32_t(ModelConfigLimits::kMaxBlockCount))
    return make_error(fmt::format("{}: {} = {} is out of range", file.name(), key, *period));
  c.layer_is_swa = swa_pattern_of_period(c.num_layers, int32_t(*period));
  return Status::ok_status();
}

void write_gguf_swa_pattern(const ModelConfig& c, int32_t default_period, format::GgufWriter& w) {
  if (c.layer_is_swa.empty() || c.layer_is_swa == swa_pattern_of_period(c.num_layers, default_period)) return;
  write_gguf_swa_layers(c, w);
}

void write_gguf_swa_layers(const ModelConfig& c, format::GgufWriter& w) {
  std::vector<format::GgufValue> flags;
  for (int32_t l = 0; l < c.num_layers; ++l)
    flags.push_back(format::GgufValue::boolean(c.layer_is_swa.empty() || c.layer_is_swa[size_t(l)] != 0));
  w.set(arch_key(c, family_key::kSlidingWindowPattern),
        format::GgufValue::array_of(format::GgufValueType::kBool, std::move(flags)));
}

Status read_hf_layer_types(const HfConfigFields& f, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(const std::vector<std::string> types, f.strings("layer_types"));
  if (types.size() != size_t(c.num_layers))
    return f.error(fmt::format("layer_types has {} entries for {} layers", types.size(), c.num_layers));
  c.layer_is_swa.clear();
  for (const std::string& t : types) {
    if (t != "sliding_attention" && t != "full_attention")
      return f.error(fmt::format("layer_types entry \"{}\" is not supported", t));
    c.layer_is_swa.push_back(t == "sliding_attention");
  }
  return Status::ok_status();
}

Status read_gguf_experts(const format::GgufFile& file, ModelConfig& c) {
  const std::string a = c.architecture + ".";
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> count, file.get_u32(arch_key(c, family_key::kExpertCount)));
  if (!count || *count == 0) return Status::ok_status();
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> used, file.get_u32(arch_key(c, family_key::kExpertUsedCount)));
  if (*count > uint32_t(ModelConfigLimits::kMaxExperts))
    return make_error(fmt::format("{}: {}expert_count = {} is out of range (1..{})", file.name(), a, *count,
                                  ModelConfigLimits::kMaxExperts));
  if (!used || *used == 0 || *used > *count)
    return make_error(fmt::format("{}: {}expert_used_count must be in 1..expert_count ({})", file.name(), a, *count));
  c.num_experts = int32_t(*count);
  c.num_experts_used = int32_t(*used);
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> ff,
                          file.get_u32(gguf_key::arch_key(c.architecture, family_key::kExpertFeedForwardLength)));
  if (ff && (*ff == 0 || *ff > uint32_t(ModelConfigLimits::kMaxFeedForwardLength)))
    return make_error(fmt::format("{}: {}expert_feed_forward_length = {} is out of range", file.name(), a, *ff));
  c.expert_hidden_dim = ff ? int32_t(*ff) : c.hidden_dim;
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> scale, file.get_f32(arch_key(c, family_key::kExpertWeightsScale)));
  if (scale) {
    if (!(*scale >= 0.0f) || !std::isfinite(*scale))
      return make_error(
          fmt::format("{}: {}expert_weights_scale = {} must be finite and non-negative", file.name(), a, *scale));
    c.expert_weights_scale = *scale;
  }
  return Status::ok_status();
}

void write_gguf_experts(const ModelConfig& c, format::GgufWriter& w) {
  if (c.num_experts == 0) return;
  w.set(arch_key(c, family_key::kExpertCount), format::GgufValue::u32(uint32_t(c.num_experts)));
  w.set(arch_key(c, family_key::kExpertUsedCount), format::GgufValue::u32(uint32_t(c.num_experts_used)));
  w.set(arch_key(c, family_key::kExpertFeedForwardLength), format::GgufValue::u32(uint32_t(c.expert_hidden_dim)));
  if (c.expert_weights_scale != 0.0f)
    w.set(arch_key(c, family_key::kExpertWeightsScale), format::GgufValue::f32(c.expert_weights_scale));
}

Status read_gguf_shared_expert(const format::GgufFile& file, int32_t default_width, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> width,
                          file.get_u32(arch_key(c, family_key::kExpertSharedFeedForwardLength)));
  if (width && (*width == 0 || *width > uint32_t(ModelConfigLimits::kMaxFeedForwardLength)))
    return make_error(fmt::format("{}: {} = {} is out of range", file.name(),
                                  arch_key(c, family_key::kExpertSharedFeedForwardLength), *width));
  c.shared_expert_hidden_dim = width ? int32_t(*width) : default_width;
  return Status::ok_status();
}

void write_gguf_shared_expert(const ModelConfig& c, format::GgufWriter& w) {
  if (c.shared_expert_hidden_dim > 0)
    w.set(arch_key(c, family_key::kExpertSharedFeedForwardLength),
          format::GgufValue::u32(uint32_t(c.shared_expert_hidden_dim)));
}

}  // namespace pagoda
