// The lfm2 family (LFM2, Lfm2ForCausalLM): a hybrid of short-convolution layers and GQA attention layers with
// per-head Q/K RMSNorm and NeoX RoPE, each followed by a SwiGLU FFN; tied embeddings and a final norm that GGUF names
// token_embd_norm (HF's embedding_norm). Which layers convolve: GGUF's per-layer attention.head_count_kv (0 on a conv
// layer, read in model_config.cc), config.json's layer_types ("conv" / "full_attention"); the convolution's width is
// lfm2.shortconv.l_cache (conv_L_cache). config.json's FFN width is adjusted as llama.cpp's converter does when
// block_auto_adjust_ff_dim is set (2/3 of it, times block_ffn_dim_multiplier, rounded up to block_multiple_of).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

constexpr const char* kShortConvLCache = "shortconv.l_cache";
constexpr int32_t kMaxConvTaps = 64;

Status read_lfm2_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> taps, gguf_arch_u32(file, c, kShortConvLCache));
  if (!taps || *taps < 2 || *taps > uint32_t(kMaxConvTaps))
    return make_error(fmt::format("{}: lfm2.{} must be in 2..{}", file.name(), kShortConvLCache, kMaxConvTaps));
  c.shortconv_l_cache = int32_t(*taps);
  c.output_norm_is_token_embd_norm = true;
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > 0)
    return make_error(fmt::format("{}: lfm2's sliding-window attention is not supported", file.name()));
  return Status::ok_status();
}

void write_lfm2_gguf(const ModelConfig& c, format::GgufWriter& w) {
  std::vector<format::GgufValue> kv_heads;
  for (int32_t l = 0; l < c.num_layers; ++l)
    kv_heads.push_back(format::GgufValue::u32(c.is_conv_layer(l) ? 0u : uint32_t(c.num_kv_heads)));
  w.set(arch_key(c, gguf_key::kHeadCountKv),
        format::GgufValue::array_of(format::GgufValueType::kUint32, std::move(kv_heads)));
  w.set(arch_key(c, kShortConvLCache), format::GgufValue::u32(uint32_t(c.shortconv_l_cache)));
}

Status read_lfm2_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.shortconv_l_cache, f.positive_int("conv_L_cache", kMaxConvTaps));
  if (c.shortconv_l_cache < 2) return f.error("conv_L_cache must be at least 2");
  PAGODA_ASSIGN_OR_RETURN(const bool conv_bias, f.bool_or("conv_bias", false));
  if (conv_bias) return f.error("conv_bias: true is not supported for Lfm2ForCausalLM");
  if (f.has("norm_eps")) {
    PAGODA_ASSIGN_OR_RETURN(const double eps, f.positive_number_or("norm_eps", 1e-5));
    c.rms_eps = float(eps);
  }
  if (f.has("tie_embedding")) {
    PAGODA_ASSIGN_OR_RETURN(h.tie_word_embeddings, f.bool_or("tie_embedding", true));
  }
  PAGODA_ASSIGN_OR_RETURN(const std::vector<std::string> types, f.strings("layer_types"));
  if (types.size() != size_t(c.num_layers))
    return f.error(fmt::format("layer_types has {} entries for {} layers", types.size(), c.num_layers));
  c.layer_is_conv.clear();
  for (const std::string& t : types) {
    if (t != "conv" && t != "full_attention")
      return f.error(fmt::format("layer_types entry \"{}\" is not supported (conv, full_attention)", t));
    c.layer_is_conv.push_back(t == "conv");
  }
  if (c.num_conv_layers() == c.num_layers) return f.error("layer_types has no full_attention layer");
  PAGODA_ASSIGN_OR_RETURN(const bool adjust, f.bool_or("block_auto_adjust_ff_dim", false));
  if (adjust) {
    PAGODA_ASSIGN_OR_RETURN(int32_t ff, f.positive_int_or("block_ff_dim", c.hidden_dim));
    PAGODA_ASSIGN_OR_RETURN(const double multiplier, f.positive_number_or("block_ffn_dim_multiplier", 1.0));
    PAGODA_ASSIGN_OR_RETURN(const int32_t multiple_of, f.positive_int_or("block_multiple_of", 256));
    ff = int32_t(2 * int64_t(ff) / 3);
    ff = int32_t(multiplier * double(ff));
    c.hidden_dim = multiple_of * ((ff + multiple_of - 1) / multiple_of);
  }
  c.output_norm_is_token_embd_norm = true;
  h.qk_norm = true;
  return Status::ok_status();
}

void write_lfm2_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "lfm2";
  j["conv_L_cache"] = c.shortconv_l_cache;
  j["conv_bias"] = false;
  j["norm_eps"] = c.rms_eps;
  j["block_auto_adjust_ff_dim"] = false;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int32_t l = 0; l < c.num_layers; ++l) types.push_back(c.is_conv_layer(l) ? "conv" : "full_attention");
  j["layer_types"] = std::move(types);
}

void lfm2_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  const auto add = [&](const char* hf, const char* gguf, std::vector<int64_t> shape, const char* fields, Kind kind,
                       Rewrite rewrite = Rewrite::kNone) {
    out.push_back(
        {p + hf, {}, format::gguf_tensor::block_tensor(layer, gguf), std::move(shape), fields, kind, rewrite});
  };
  using namespace format::gguf_tensor;
  add("operator_norm.weight", kAttnNorm, {dim}, "hidden_size", Kind::kNorm);
  if (c.is_conv_layer(layer)) {
    add("conv.in_proj.weight", kShortConvInProj, {3 * dim, dim}, "3 * hidden_size, hidden_size", Kind::kMatrix);
    add("conv.out_proj.weight", kShortConvOutProj, {dim, dim}, "hidden_size, hidden_size", Kind::kMatrix);
    // [dim, 1, L] depthwise: stored [L, dim] in f32 without the unit dimension, as llama.cpp's converter squeezes it.
    add("conv.conv.weight", kShortConvConv, {dim, 1, c.shortconv_l_cache}, "hidden_size, 1, conv_L_cache",
        Kind::kNorm, Rewrite::kSqueezeToF32);
  } else {
    add("self_attn.q_proj.weight", kAttnQ, {q_dim, dim}, "num_attention_heads * head_dim, hidden_size", Kind::kMatrix);
    add("self_attn.k_proj.weight", kAttnK, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size",
        Kind::kMatrix);
    add("self_attn.v_proj.weight", kAttnV, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size",
        Kind::kMatrix);
    add("self_attn.out_proj.weight", kAttnOutput, {dim, q_dim}, "hidden_size, num_attention_heads * head_dim",
        Kind::kMatrix);
    add("self_attn.q_layernorm.weight", kAttnQNorm, {c.head_dim}, "head_dim", Kind::kNorm);
    add("self_attn.k_layernorm.weight", kAttnKNorm, {c.head_dim}, "head_dim", Kind::kNorm);
  }
  add("ffn_norm.weight", kFfnNorm, {dim}, "hidden_size", Kind::kNorm);
  add("feed_forward.w1.weight", kFfnGate, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("feed_forward.w3.weight", kFfnUp, {hidden, dim}, "intermediate_size, hidden_size", Kind::kMatrix);
  add("feed_forward.w2.weight", kFfnDown, {dim, hidden}, "hidden_size, intermediate_size", Kind::kMatrix);
}

}  // namespace

extern const ArchitectureFamily kLfm2Family{"lfm2", true, read_lfm2_gguf, write_lfm2_gguf};
extern const HfFamily kLfm2Hf{"Lfm2ForCausalLM", "lfm2", "", read_lfm2_config, write_lfm2_config,
                              lfm2_layer_tensors};

}  // namespace pagoda
