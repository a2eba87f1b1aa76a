// The gpt-oss family (OpenAI's gpt-oss-20b and -120b; llama.cpp's LLM_ARCH_OPENAI_MOE, GGUF name "gpt-oss"): NeoX
// RoPE (YaRN in the released models), biases on the Q/K/V and output projections, a learned attention sink per query
// head (blk.N.attn_sinks), a sliding window (gpt-oss.attention.sliding_window) on alternate layers (the pattern's
// period 2 by default: even layers windowed), and a mixture of experts on every layer: the router (with a bias)
// picks the top-k experts by logit and softmaxes over those k only, each expert has biases on its gate, up and down
// projections and the clamped SwiGLU (FfnActivation::kSwigluOai). The pre-FFN RMSNorm is stored as
// post_attention_norm. The tensors' presence (biases, sinks) is checked by model_weights.cc; here only the keys.
// Its HF folders (GptOssForCausalLM) as OpenAI publishes them: experts in MXFP4 (`*_blocks` and `*_scales`, U8), gate
// and up interleaved in one gate_up_proj (even rows gate, odd rows up, and its bias alike), the sinks as
// self_attn.sinks, the router as mlp.router; read as llama.cpp's converter writes the GGUF (hf_checkpoint.cc repacks
// the blocks). A folder of dequantized experts (no quantization_config) is refused by name.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

constexpr int32_t kGptOssSwaPeriod = 2;
constexpr const char* kGptOssRopeFreqBaseSwa = "rope.freq_base_swa";

Status read_gpt_oss_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0)
    return make_error(fmt::format("{}: gpt-oss needs gpt-oss.expert_count and expert_used_count", file.name()));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (!window) return make_error(fmt::format("{}: gpt-oss needs gpt-oss.attention.sliding_window", file.name()));
  if (*window == 0 || *window > uint32_t(Limits::kMaxContextLength))
    return make_error(fmt::format("{}: gpt-oss.attention.sliding_window = {} is out of range", file.name(), *window));
  c.sliding_window = int32_t(*window);
  PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, kGptOssSwaPeriod, c));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, kGptOssRopeFreqBaseSwa));
  if (base_swa) c.rope_theta_swa = *base_swa;
  c.expert_weights_norm = false;
  c.expert_softmax_after_topk = true;
  c.activation = FfnActivation::kSwigluOai;
  c.ffn_norm_is_post_attention_norm = true;
  return Status::ok_status();
}

void write_gpt_oss_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gguf_experts(c, w);
  w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  write_gguf_swa_pattern(c, kGptOssSwaPeriod, w);
  if (c.rope_theta_swa > 0.0f) w.set(arch_key(c, kGptOssRopeFreqBaseSwa), format::GgufValue::f32(c.rope_theta_swa));
}

// llama.cpp runs gpt-oss with SwiGLU's clamp at 7 and the even layers windowed whatever config.json says: a folder
// that asks otherwise is refused rather than run differently.
constexpr double kGptOssSwigluLimit = 7.0;

Status read_gpt_oss_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_local_experts", Limits::kMaxExperts));
  const char* used = f.has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int(used, c.num_experts));
  c.expert_hidden_dim = c.hidden_dim;  // intermediate_size is each expert's width
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.positive_int("sliding_window", Limits::kMaxContextLength));
  c.layer_is_swa = swa_pattern_of_period(c.num_layers, kGptOssSwaPeriod);
  if (f.has("layer_types")) {
    ModelConfig listed = c;
    PAGODA_RETURN_IF_ERROR(read_hf_layer_types(f, listed));
    if (listed.layer_is_swa != c.layer_is_swa)
      return f.error("layer_types must alternate sliding_attention, full_attention (llama.cpp's gpt-oss pattern)");
  }
  PAGODA_ASSIGN_OR_RETURN(const double limit, f.positive_number_or("swiglu_limit", kGptOssSwigluLimit));
  if (limit != kGptOssSwigluLimit)
    return f.error(fmt::format("swiglu_limit {} is not supported (gpt-oss's {})", limit, kGptOssSwigluLimit));
  if (!f.has("quantization_config"))
    return f.error("no quantization_config: only gpt-oss folders with MXFP4 experts (as OpenAI publishes them) are "
                   "read; convert a dequantized one with llama.cpp's convert_hf_to_gguf.py");
  PAGODA_ASSIGN_OR_RETURN(const HfConfigFields q, f.object("quantization_config"));
  PAGODA_ASSIGN_OR_RETURN(const std::string method, q.string_or("quant_method", ""));
  if (method != "mxfp4")
    return q.error(fmt::format("quant_method \"{}\" is not supported for gpt-oss (mxfp4)", method));
  h.qkv_bias = true;
  c.expert_weights_norm = false;
  c.expert_softmax_after_topk = true;
  c.activation = FfnActivation::kSwigluOai;
  c.ffn_norm_is_post_attention_norm = true;
  return Status::ok_status();
}

void write_gpt_oss_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "gpt_oss";
  j["intermediate_size"] = c.expert_hidden_dim;
  j["num_local_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.num_experts_used;
  j["experts_per_token"] = c.num_experts_used;
  j["sliding_window"] = c.sliding_window;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int32_t l = 0; l < c.num_layers; ++l) types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
  j["layer_types"] = types;
  j["swiglu_limit"] = kGptOssSwigluLimit;
  j["attention_bias"] = true;
  j["quantization_config"] = {{"quant_method", "mxfp4"}};
}

void gpt_oss_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, experts = c.num_experts, hidden = c.expert_hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  append_hf_attention_tensors(h, layer, out);
  out.push_back({p + "self_attn.o_proj.bias", {}, t::block_tensor(layer, t::kAttnOutput, "bias"), {dim}, "hidden_size",
                 Kind::kBias});
  out.push_back({p + "self_attn.sinks", {}, t::block_tensor(layer, t::kAttnSinks), {c.num_heads},
                 "num_attention_heads", Kind::kBias});
  out.push_back({p + "post_attention_layernorm.weight", {}, t::block_tensor(layer, t::kPostAttentionNorm), {dim},
                 "hidden_size", Kind::kNorm});
  out.push_back({p + "mlp.router.weight", {}, t::block_tensor(layer, t::kFfnGateInp), {experts, dim},
                 "num_local_experts, hidden_size", Kind::kMatrix});
  out.push_back({p + "mlp.router.bias", {}, t::block_tensor(layer, t::kFfnGateInp, "bias"), {experts},
                 "num_local_experts", Kind::kBias});
  const char* gate_up_fields = "num_local_experts, 2 * intermediate_size, hidden_size";
  out.push_back({p + "mlp.experts.gate_up_proj", {}, t::block_tensor(layer, t::kFfnGateExps), {experts, 2 * hidden, dim},
                 gate_up_fields, Kind::kMxfp4, Rewrite::kEvenRows});
  out.push_back({p + "mlp.experts.gate_up_proj_bias", {}, t::block_tensor(layer, t::kFfnGateExps, "bias"),
                 {experts, 2 * hidden}, "num_local_experts, 2 * intermediate_size", Kind::kBias, Rewrite::kEvenRows});
  out.push_back({p + "mlp.experts.gate_up_proj", {}, t::block_tensor(layer, t::kFfnUpExps), {experts, 2 * hidden, dim},
                 gate_up_fields, Kind::kMxfp4, Rewrite::kOddRows});
  out.push_back({p + "mlp.experts.gate_up_proj_bias", {}, t::block_tensor(layer, t::kFfnUpExps, "bias"),
                 {experts, 2 * hidden}, "num_local_experts, 2 * intermediate_size", Kind::kBias, Rewrite::kOddRows});
  out.push_back({p + "mlp.experts.down_proj", {}, t::block_tensor(layer, t::kFfnDownExps), {experts, dim, hidden},
                 "num_local_experts, hidden_size, intermediate_size", Kind::kMxfp4});
  out.push_back({p + "mlp.experts.down_proj_bias", {}, t::block_tensor(layer, t::kFfnDownExps, "bias"),
                 {experts, dim}, "num_local_experts, hidden_size", Kind::kBias, Rewrite::kToF32});
}

}  // namespace

extern const ArchitectureFamily kGptOssFamily{"gpt-oss", true, read_gpt_oss_gguf, write_gpt_oss_gguf};
extern const HfFamily kGptOssHf{"GptOssForCausalLM", "gpt-oss", "", read_gpt_oss_config, write_gpt_oss_config,
                                gpt_oss_layer_tensors};

}  // namespace pagoda
