// The Gemma 4 family's dense sizes (E2B, E4B; llama.cpp's gemma4): Gemma 3's block (GeGLU, embeddings scaled by
// sqrt(dim), pre and post norms, per-head Q/K RMSNorm, windowed and full layers, final soft-capping) with plain
// RMSNorm weights (no 1 + w), no query scaling (attention scale 1), V RMS-normed per head without a weight, its own
// head size and RoPE on the full layers (a larger head, "proportional" RoPE: only the first fraction of each head's
// pairs rotate, the rest get frequency divisors of 1e30, as llama.cpp's converter writes rope_freqs.weight), the last
// num_kv_shared_layers layers reading an earlier layer's K/V, wider FFNs in those layers (use_double_wide_mlp),
// per-layer token embeddings and a scalar on each block's output. The MoE size (26B-A4B, enable_moe_block): every
// layer's experts beside its dense FFN (ModelConfig::moe_beside_dense_ffn; softmax router, top-k renormalized, a scale
// per expert), gate and up stacked in one tensor. Owns the family's GGUF keys, config.json fields and HF tensor names;
// the forward pass is model/llama_model.cc's and model/moe_ffn.cc's.
// The 31B's and 26B-A4B's full layers: their own count of KV heads (num_global_key_value_heads; GGUF: head_count_kv
// per layer) and no V projection (attention_k_eq_v; GGUF: no attn_v on those layers), V being K's projection.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

// The family's own GGUF keys, under "<arch>." (llama.cpp's names).
namespace gemma4_key {
constexpr const char* kFinalLogitSoftcapping = "final_logit_softcapping";
constexpr const char* kRopeFreqBaseSwa = "rope.freq_base_swa";
constexpr const char* kKeyLengthSwa = "attention.key_length_swa";
constexpr const char* kValueLengthSwa = "attention.value_length_swa";
constexpr const char* kRopeDimensionCountSwa = "rope.dimension_count_swa";
constexpr const char* kSharedKvLayers = "attention.shared_kv_layers";
constexpr const char* kEmbeddingLengthPerLayer = "embedding_length_per_layer_input";
}  // namespace gemma4_key

using Limits = ModelConfigLimits;

// llama.cpp's reuse rule for the KV-sharing layers: the last earlier layer of the same kind. Returns what is
// wrong, or "".
std::string kv_sharing_problem(const ModelConfig& c) {
  if (c.num_kv_shared_layers < 0 || c.num_kv_shared_layers >= c.num_layers)
    return fmt::format("{} KV-sharing layers of {} leave none to share", c.num_kv_shared_layers, c.num_layers);
  for (int32_t l = c.first_shared_kv_layer(); l < c.num_layers; ++l)
    if (c.kv_layer(l) < 0)
      return fmt::format("layer {} shares the K/V of an earlier {} layer, and there is none", l,
                         c.is_swa_layer(l) ? "sliding-window" : "full-attention");
  return "";
}

// Each kind of layer (windowed, full) one count of KV heads, since a sharing layer reads the K/V of an earlier layer
// of its kind. Returns what is wrong, or "".
std::string kv_heads_problem(const ModelConfig& c) {
  for (int32_t l = 0; l < c.num_layers; ++l)
    for (int32_t m = 0; m < l; ++m)
      if (c.is_swa_layer(m) == c.is_swa_layer(l) && c.layer_num_kv_heads(m) != c.layer_num_kv_heads(l))
        return fmt::format("layers {} and {} are of one kind with {} and {} KV heads", m, l, c.layer_num_kv_heads(m),
                           c.layer_num_kv_heads(l));
  return "";
}

// What every Gemma 4 config implies, read from GGUF or config.json alike.
void set_gemma4_switches(ModelConfig& c) {
  c.activation = FfnActivation::kGeluTanh;
  c.embedding_scale = std::sqrt(float(c.dim));
  c.post_norms = true;
  c.attention_scale = 1.0f;
  c.v_norm = true;
  c.rope_factors_full_only = true;
  c.rope_freq_scale_swa = 1.0f;
}

// Gemma 4's MoE layers (llama.cpp's gemma4 graph): the top-k softmax weights renormalized, unscaled, the experts
// beside the dense FFN.
void set_gemma4_moe_switches(ModelConfig& c) {
  c.expert_weights_norm = true;
  c.expert_weights_scale = 0.0f;
  c.moe_beside_dense_ffn = true;
}

// The head sizes the cache rows and the forward's per-head buffers take. Returns what is wrong, or "".
std::string head_dims_problem(const ModelConfig& c) {
  for (int32_t d : {c.head_dim, c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim})
    if (d > 512 || d % 32 != 0) return fmt::format("head size {} must be a multiple of 32 and at most 512", d);
  if (c.rope_dim_swa > 0 && (c.rope_dim_swa % 2 != 0 || c.rope_dim_swa > c.head_dim_swa))
    return fmt::format("the windowed layers rotate {} dims of {}", c.rope_dim_swa, c.head_dim_swa);
  return "";
}

Status read_gemma4_gguf(const format::GgufFile& file, ModelConfig& c) {
  const std::string where = file.name();
  set_gemma4_switches(c);
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> experts, gguf_arch_u32(file, c, family_key::kExpertCount));
  if (experts && *experts > 0) {
    PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
    set_gemma4_moe_switches(c);
  }
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (!window || *window == 0 || *window > uint32_t(Limits::kMaxContextLength))
    return make_error(fmt::format("{}: gemma4.attention.sliding_window must be set (1..{})", where,
                                  Limits::kMaxContextLength));
  c.sliding_window = int32_t(*window);
  PAGODA_RETURN_IF_ERROR(read_gguf_swa_pattern(file, 5, c));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> base_swa, gguf_arch_f32(file, c, gemma4_key::kRopeFreqBaseSwa));
  c.rope_theta_swa = base_swa.value_or(10000.0f);
  if (!(c.rope_theta_swa > 0.0f)) return make_error(fmt::format("{}: gemma4.rope.freq_base_swa must be positive", where));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> value_length, gguf_arch_u32(file, c, gguf_key::kValueLength));
  if (value_length && int32_t(*value_length) != c.head_dim)
    return make_error(fmt::format("{}: Gemma 4 needs attention.value_length = key_length", where));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> key_swa, gguf_arch_u32(file, c, gemma4_key::kKeyLengthSwa));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> value_swa, gguf_arch_u32(file, c, gemma4_key::kValueLengthSwa));
  if (key_swa.value_or(0) != value_swa.value_or(key_swa.value_or(0)))
    return make_error(fmt::format("{}: Gemma 4 needs attention.value_length_swa = key_length_swa", where));
  if (key_swa && (*key_swa == 0 || *key_swa > uint32_t(Limits::kMaxHeadDim)))
    return make_error(fmt::format("{}: gemma4.attention.key_length_swa = {} is out of range", where, *key_swa));
  const int32_t head_swa = key_swa ? int32_t(*key_swa) : c.head_dim;
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> rope_swa, gguf_arch_u32(file, c, gemma4_key::kRopeDimensionCountSwa));
  if (head_swa != c.head_dim || (rope_swa && int32_t(*rope_swa) != c.rope_dim)) {
    c.head_dim_swa = head_swa;
    c.rope_dim_swa = rope_swa ? int32_t(*rope_swa) : head_swa;
  }
  if (const std::string p = head_dims_problem(c); !p.empty()) return make_error(where + ": " + p);
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> shared, gguf_arch_u32(file, c, gemma4_key::kSharedKvLayers));
  c.num_kv_shared_layers = int32_t(shared.value_or(0));
  if (const std::string p = kv_sharing_problem(c); !p.empty()) return make_error(where + ": " + p);
  if (const std::string p = kv_heads_problem(c); !p.empty()) return make_error(where + ": " + p);
  // K as V (llama.cpp reads V from K where a layer has no attn_v): the full layers that write K/V have none.
  for (int32_t l = 0; l < c.first_shared_kv_layer(); ++l)
    if (!c.is_swa_layer(l)) {
      c.full_layers_v_is_k =
          file.find_tensor(format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnV)) == nullptr;
      break;
    }
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> per_layer, gguf_arch_u32(file, c, gemma4_key::kEmbeddingLengthPerLayer));
  if (per_layer && *per_layer > uint32_t(Limits::kMaxEmbeddingLength))
    return make_error(fmt::format("{}: gemma4.embedding_length_per_layer_input is out of range", where));
  c.per_layer_input_dim = int32_t(per_layer.value_or(0));
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> final_cap, gguf_arch_f32(file, c, gemma4_key::kFinalLogitSoftcapping));
  if (final_cap && (!(*final_cap >= 0.0f) || !std::isfinite(*final_cap)))
    return make_error(fmt::format("{}: gemma4.final_logit_softcapping must be non-negative", where));
  c.final_softcap = final_cap.value_or(0.0f);
  return Status::ok_status();
}

void write_gemma4_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_gguf_experts(c, w);
  w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  write_gguf_swa_layers(c, w);
  w.set(arch_key(c, gemma4_key::kRopeFreqBaseSwa), format::GgufValue::f32(c.rope_theta_swa));
  const int32_t head_swa = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
  w.set(arch_key(c, gemma4_key::kKeyLengthSwa), format::GgufValue::u32(uint32_t(head_swa)));
  w.set(arch_key(c, gemma4_key::kValueLengthSwa), format::GgufValue::u32(uint32_t(head_swa)));
  w.set(arch_key(c, gemma4_key::kRopeDimensionCountSwa),
        format::GgufValue::u32(uint32_t(c.rope_dim_swa > 0 ? c.rope_dim_swa : c.rope_dim)));
  w.set(arch_key(c, gemma4_key::kSharedKvLayers), format::GgufValue::u32(uint32_t(c.num_kv_shared_layers)));
  w.set(arch_key(c, gemma4_key::kEmbeddingLengthPerLayer), format::GgufValue::u32(uint32_t(c.per_layer_input_dim)));
  if (c.final_softcap > 0.0f) w.set(arch_key(c, gemma4_key::kFinalLogitSoftcapping), format::GgufValue::f32(c.final_softcap));
  if (!c.layer_hidden_dims.empty())
    w.set(arch_key(c, gguf_key::kFeedForwardLength), format::GgufValue::i32_array(c.layer_hidden_dims));
  if (!c.layer_kv_heads.empty())
    w.set(arch_key(c, gguf_key::kHeadCountKv), format::GgufValue::i32_array(c.layer_kv_heads));
}

// config.json (Gemma4TextConfig's fields). The common reader took head_dim as the windowed layers' head size.
Status read_gemma4_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  set_gemma4_switches(c);
  h.norms_plus_one = false;
  h.qk_norm = true;
  PAGODA_ASSIGN_OR_RETURN(h.tie_word_embeddings, f.bool_or("tie_word_embeddings", true));
  if (!h.tie_word_embeddings) return f.error("tie_word_embeddings must be true for Gemma 4 (no lm_head)");
  PAGODA_ASSIGN_OR_RETURN(const std::string act, f.string_or("hidden_activation", "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    return f.error(fmt::format("hidden_activation \"{}\" is not supported (gelu_pytorch_tanh)", act));
  PAGODA_ASSIGN_OR_RETURN(const bool moe, f.bool_or("enable_moe_block", false));
  if (moe) {
    PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_experts", Limits::kMaxExperts));
    PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int("top_k_experts", c.num_experts));
    const char* width = f.has("moe_intermediate_size") ? "moe_intermediate_size" : "expert_intermediate_size";
    PAGODA_ASSIGN_OR_RETURN(c.expert_hidden_dim, f.positive_int(width, Limits::kMaxFeedForwardLength));
    set_gemma4_moe_switches(c);
  }
  PAGODA_ASSIGN_OR_RETURN(c.full_layers_v_is_k, f.bool_or("attention_k_eq_v", false));
  const int32_t head_swa = c.head_dim;
  PAGODA_ASSIGN_OR_RETURN(c.head_dim, f.positive_int_or("global_head_dim", head_swa, Limits::kMaxHeadDim));
  c.rope_dim = c.head_dim;
  if (head_swa != c.head_dim) {
    c.head_dim_swa = head_swa;
    c.rope_dim_swa = head_swa;
  }
  if (const std::string p = head_dims_problem(c); !p.empty()) return f.error(p);
  PAGODA_ASSIGN_OR_RETURN(double final_cap, f.positive_number_or("final_logit_softcapping", 0.0));
  c.final_softcap = float(final_cap);
  PAGODA_ASSIGN_OR_RETURN(c.sliding_window, f.positive_int("sliding_window", Limits::kMaxContextLength));
  if (f.has("layer_types")) {
    PAGODA_RETURN_IF_ERROR(read_hf_layer_types(f, c));
  } else {
    PAGODA_ASSIGN_OR_RETURN(int32_t period, f.int_or("sliding_window_pattern", 5, Limits::kMaxBlockCount));
    c.layer_is_swa = swa_pattern_of_period(c.num_layers, period);
  }
  // The full layers' own count of KV heads (llama.cpp's converter: head_count_kv per layer).
  if (f.has("num_global_key_value_heads")) {
    PAGODA_ASSIGN_OR_RETURN(const int32_t global_kv, f.positive_int("num_global_key_value_heads", c.num_heads));
    if (c.num_heads % global_kv != 0)
      return f.error(fmt::format("num_attention_heads {} is not a multiple of num_global_key_value_heads {}",
                                 c.num_heads, global_kv));
    if (global_kv != c.num_kv_heads) {
      const int32_t swa_kv = c.num_kv_heads;
      for (int32_t l = 0; l < c.num_layers; ++l) c.layer_kv_heads.push_back(c.is_swa_layer(l) ? swa_kv : global_kv);
      c.num_kv_heads = std::max(swa_kv, global_kv);
    }
  }
  PAGODA_ASSIGN_OR_RETURN(c.num_kv_shared_layers, f.int_or("num_kv_shared_layers", 0, Limits::kMaxBlockCount));
  if (const std::string p = kv_sharing_problem(c); !p.empty()) return f.error(p);
  PAGODA_ASSIGN_OR_RETURN(const bool double_wide, f.bool_or("use_double_wide_mlp", false));
  if (double_wide && c.num_kv_shared_layers > 0) {
    c.layer_hidden_dims.assign(size_t(c.num_layers), c.hidden_dim);
    for (int32_t l = c.first_shared_kv_layer(); l < c.num_layers; ++l) c.layer_hidden_dims[size_t(l)] = 2 * c.hidden_dim;
    c.hidden_dim *= 2;
  }
  PAGODA_ASSIGN_OR_RETURN(c.per_layer_input_dim,
                          f.int_or("hidden_size_per_layer_input", 0, Limits::kMaxEmbeddingLength));
  if (c.per_layer_input_dim > 0 && f.has("vocab_size_per_layer_input")) {
    PAGODA_ASSIGN_OR_RETURN(const int32_t pl_vocab, f.positive_int("vocab_size_per_layer_input", Limits::kMaxVocabSize));
    if (pl_vocab != c.vocab_size) return f.error("vocab_size_per_layer_input must equal vocab_size");
  }
  // RoPE per layer type: the windowed layers plain (their own base), the full ones "proportional" (the first
  // partial_rotary_factor of each head's pairs rotate with frequencies over the whole head) or default.
  c.rope_theta_swa = 10000.0f;
  double full_fraction = 1.0;
  if (f.has("rope_parameters")) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rp, f.object("rope_parameters"));
    if (rp.has("sliding_attention")) {
      PAGODA_ASSIGN_OR_RETURN(const HfConfigFields swa, rp.object("sliding_attention"));
      PAGODA_ASSIGN_OR_RETURN(const std::string type, swa.string_or("rope_type", "default"));
      if (type != "default") return swa.error(fmt::format("rope_type \"{}\" of sliding_attention is not supported", type));
      PAGODA_ASSIGN_OR_RETURN(const double theta, swa.positive_number_or("rope_theta", 10000.0));
      c.rope_theta_swa = float(theta);
    }
    if (rp.has("full_attention")) {
      PAGODA_ASSIGN_OR_RETURN(const HfConfigFields full, rp.object("full_attention"));
      PAGODA_ASSIGN_OR_RETURN(const std::string type, full.string_or("rope_type", "default"));
      if (type != "default" && type != "proportional")
        return full.error(fmt::format("rope_type \"{}\" of full_attention is not supported", type));
      PAGODA_ASSIGN_OR_RETURN(const double theta, full.positive_number_or("rope_theta", 1000000.0));
      c.rope_theta = float(theta);
      if (type == "proportional") {
        PAGODA_ASSIGN_OR_RETURN(full_fraction, full.positive_number_or("partial_rotary_factor", 1.0, 1.0));
      }
    }
  }
  // rope_freqs.weight: llama.cpp's gemma4 reads it for every full layer, so it is written even when all ones.
  const int32_t pairs = c.head_dim / 2, rotated = int32_t(double(c.head_dim) * full_fraction / 2.0);
  c.rope_freq_factors.assign(size_t(pairs), 1.0f);
  for (int32_t i = rotated; i < pairs; ++i) c.rope_freq_factors[size_t(i)] = 1e30f;
  return Status::ok_status();
}

void write_gemma4_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = "gemma4_text";
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["tie_word_embeddings"] = true;
  j["head_dim"] = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
  j["attention_k_eq_v"] = c.full_layers_v_is_k;
  if (!c.layer_kv_heads.empty()) {
    for (int32_t l = 0; l < c.num_layers; ++l)
      j[c.is_swa_layer(l) ? "num_key_value_heads" : "num_global_key_value_heads"] = c.layer_num_kv_heads(l);
  }
  j["global_head_dim"] = c.head_dim;
  j["intermediate_size"] = c.layer_hidden_dims.empty() ? c.hidden_dim : c.layer_hidden_dims.front();
  j["use_double_wide_mlp"] = !c.layer_hidden_dims.empty();
  j["num_kv_shared_layers"] = c.num_kv_shared_layers;
  j["hidden_size_per_layer_input"] = c.per_layer_input_dim;
  j["vocab_size_per_layer_input"] = c.vocab_size;
  j["final_logit_softcapping"] = c.final_softcap > 0.0f ? nlohmann::ordered_json(c.final_softcap) : nullptr;
  j["sliding_window"] = c.sliding_window;
  j["enable_moe_block"] = c.num_experts > 0;
  if (c.num_experts > 0) {
    j["num_experts"] = c.num_experts;
    j["top_k_experts"] = c.num_experts_used;
    j["moe_intermediate_size"] = c.expert_hidden_dim;
  }
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int32_t l = 0; l < c.num_layers; ++l) types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
  j["layer_types"] = std::move(types);
  int32_t rotated = 0;
  for (float f : c.rope_freq_factors) rotated += f == 1.0f;
  const double fraction = c.head_dim > 0 ? 2.0 * rotated / c.head_dim : 1.0;
  j["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c.rope_theta_swa}}},
      {"full_attention",
       {{"rope_type", "proportional"}, {"partial_rotary_factor", fraction}, {"rope_theta", c.rope_theta}}}};
  j.erase("rope_scaling");
  j.erase("rope_theta");
}

void gemma4_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, head = c.layer_head_dim(layer), q_dim = c.layer_q_dim(layer);
  const int64_t kv_dim = c.layer_kv_dim(layer), hidden = c.layer_hidden_dim(layer), pl = c.per_layer_input_dim;
  const std::string p = fmt::format("model.layers.{}.", layer);
  auto add = [&](std::string hf, const char* gguf, std::vector<int64_t> shape, const char* fields,
                 Kind kind = Kind::kMatrix) {
    out.push_back({p + hf, {}, t::block_tensor(layer, gguf), std::move(shape), fields, kind});
  };
  add("input_layernorm.weight", t::kAttnNorm, {dim}, "hidden_size", Kind::kNorm);
  add("self_attn.q_proj.weight", t::kAttnQ, {q_dim, dim}, "num_attention_heads * head_dim, hidden_size");
  // A KV-sharing layer has no K/V of its own to compute.
  if (c.writes_kv(layer)) {
    add("self_attn.k_proj.weight", t::kAttnK, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size");
    // A full layer of attention_k_eq_v takes K's projection as V.
    if (!c.layer_v_is_k(layer))
      add("self_attn.v_proj.weight", t::kAttnV, {kv_dim, dim}, "num_key_value_heads * head_dim, hidden_size");
  }
  add("self_attn.o_proj.weight", t::kAttnOutput, {dim, q_dim}, "hidden_size, num_attention_heads * head_dim");
  add("self_attn.q_norm.weight", t::kAttnQNorm, {head}, "head_dim", Kind::kNorm);
  if (c.writes_kv(layer)) add("self_attn.k_norm.weight", t::kAttnKNorm, {head}, "head_dim", Kind::kNorm);
  add("post_attention_layernorm.weight", t::kPostAttentionNorm, {dim}, "hidden_size", Kind::kNorm);
  add("pre_feedforward_layernorm.weight", t::kFfnNorm, {dim}, "hidden_size", Kind::kNorm);
  add("mlp.gate_proj.weight", t::kFfnGate, {hidden, dim}, "intermediate_size, hidden_size");
  add("mlp.up_proj.weight", t::kFfnUp, {hidden, dim}, "intermediate_size, hidden_size");
  add("mlp.down_proj.weight", t::kFfnDown, {dim, hidden}, "hidden_size, intermediate_size");
  add("post_feedforward_layernorm.weight", t::kPostFfwNorm, {dim}, "hidden_size", Kind::kNorm);
  if (c.num_experts > 0) {
    // The experts beside the dense FFN: the router (its projection, input scale and per-expert output scale), gate
    // and up stacked per expert [experts, 2 * moe_intermediate_size, hidden_size] (llama.cpp's ffn_gate_up_exps),
    // down, and the branches' norms.
    const int64_t experts = c.num_experts, expert_hidden = c.expert_hidden_dim;
    auto add_named = [&](std::string hf, std::string gguf, std::vector<int64_t> shape, const char* fields, Kind kind) {
      out.push_back({p + hf, {}, std::move(gguf), std::move(shape), fields, kind});
    };
    add("router.proj.weight", t::kFfnGateInp, {experts, dim}, "num_experts, hidden_size");
    add_named("router.scale", t::block_tensor(layer, t::kFfnGateInp, "scale"), {dim}, "hidden_size", Kind::kNorm);
    add_named("router.per_expert_scale", t::block_tensor(layer, t::kFfnDownExps, "scale"), {experts}, "num_experts",
              Kind::kNorm);
    add("experts.gate_up_proj", t::kFfnGateUpExps, {experts, 2 * expert_hidden, dim},
        "num_experts, 2 * moe_intermediate_size, hidden_size");
    add("experts.down_proj", t::kFfnDownExps, {experts, dim, expert_hidden},
        "num_experts, hidden_size, moe_intermediate_size");
    add("pre_feedforward_layernorm_2.weight", t::kPreFfwNorm2, {dim}, "hidden_size", Kind::kNorm);
    add("post_feedforward_layernorm_1.weight", t::kPostFfwNorm1, {dim}, "hidden_size", Kind::kNorm);
    add("post_feedforward_layernorm_2.weight", t::kPostFfwNorm2, {dim}, "hidden_size", Kind::kNorm);
  }
  if (pl > 0) {
    add("per_layer_input_gate.weight", t::kPerLayerInpGate, {pl, dim}, "hidden_size_per_layer_input, hidden_size");
    add("per_layer_projection.weight", t::kPerLayerProj, {dim, pl}, "hidden_size, hidden_size_per_layer_input");
    add("post_per_layer_input_norm.weight", t::kPerLayerPostNorm, {dim}, "hidden_size", Kind::kNorm);
  }
  add("layer_scalar", t::kLayerOutputScale, {1}, "1", Kind::kNorm);
}

void gemma4_model_tensors(const HfConfig& h, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t pl = c.per_layer_input_dim, all = int64_t(c.num_layers) * pl;
  if (pl == 0) return;
  out.push_back({"model.embed_tokens_per_layer.weight",
                 {},
                 t::kPerLayerTokenEmbedding,
                 {c.vocab_size, all},
                 "vocab_size, num_hidden_layers * hidden_size_per_layer_input"});
  out.push_back({"model.per_layer_model_projection.weight",
                 {},
                 t::kPerLayerModelProj,
                 {all, c.dim},
                 "num_hidden_layers * hidden_size_per_layer_input, hidden_size"});
  out.push_back({"model.per_layer_projection_norm.weight",
                 {},
                 t::kPerLayerProjNorm,
                 {pl},
                 "hidden_size_per_layer_input",
                 Kind::kNorm});
}

}  // namespace

extern const ArchitectureFamily kGemma4Family{"gemma4", true, read_gemma4_gguf, write_gemma4_gguf};
extern const HfFamily kGemma4Hf{"Gemma4ForCausalLM", "gemma4",           "", read_gemma4_config,
                                write_gemma4_config, gemma4_layer_tensors, gemma4_model_tensors};

}  // namespace pagoda
