// The qwen35 and qwen35moe families (Qwen3.5's dense and MoE text models, llama.cpp's QWEN35 / QWEN35MOE): a hybrid of gated DeltaNet layers
// (ModelConfig::is_delta_net: linear attention with a recurrent state per sequence) and gated full attention (an
// output gate from attn_q's second half of each head, per-head Q/K RMSNorm, partial NeoX rotary), each followed by a
// SwiGLU FFN whose pre-norm is GGUF's post_attention_norm. Its keys: ssm.conv_kernel, ssm.state_size (the heads'
// width), ssm.group_count (key heads), ssm.time_step_rank (value heads), ssm.inner_size (value heads times their
// width, which must equal the key heads'), full_attention_interval (layer l is full attention when (l + 1) is a
// multiple of it; llama.cpp's default 4) or attention.recurrent_layers (one bool a layer), and
// rope.dimension_sections: interleaved M-RoPE, which on text (every section at the token's position) is NeoX RoPE
// over rope.dimension_count dims. qwen35moe's FFN is a mixture of experts (softmax router, top-k renormalized, as
// llama.cpp always does for it) with a shared expert gated by sigmoid(x . ffn_gate_inp_shexp) when the file has
// expert_shared_feed_forward_length. Its HF folders: below, read_qwen35_config and qwen35_layer_tensors. The keys and
// config.json fields it shares with qwen3next (arch_qwen3next.cc) are defined here: read_gguf_gated_delta_net,
// read_hf_gated_delta_net (architecture.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

constexpr const char* kConvKernel = "ssm.conv_kernel";
constexpr const char* kStateSize = "ssm.state_size";
constexpr const char* kGroupCount = "ssm.group_count";
constexpr const char* kTimeStepRank = "ssm.time_step_rank";
constexpr const char* kInnerSize = "ssm.inner_size";
constexpr const char* kFullAttentionInterval = "full_attention_interval";
constexpr const char* kRecurrentLayers = "attention.recurrent_layers";
constexpr const char* kRopeSections = "rope.dimension_sections";
constexpr int32_t kDefaultFullAttentionInterval = 4;
constexpr int32_t kMaxConvKernel = 64;
constexpr int32_t kMaxDeltaNetHeads = 1024;

Result<int32_t> required(const format::GgufFile& file, const ModelConfig& c, const char* suffix, int32_t max_value) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> v, gguf_arch_u32(file, c, suffix));
  if (!v) return make_error(fmt::format("{}: missing metadata key {}", file.name(), arch_key(c, suffix)));
  if (*v == 0 || *v > uint32_t(max_value))
    return make_error(fmt::format("{}: {} = {} is out of range (1..{})", file.name(), arch_key(c, suffix), *v,
                                  max_value));
  return int32_t(*v);
}

}  // namespace

Status read_gguf_gated_delta_net(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_conv_kernel, required(file, c, kConvKernel, kMaxConvKernel));
  if (c.delta_net_conv_kernel < 2)
    return make_error(fmt::format("{}: {} must be at least 2", file.name(), arch_key(c, kConvKernel)));
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_head_dim, required(file, c, kStateSize, kernels::kMaxDeltaNetHeadDim));
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_k_heads, required(file, c, kGroupCount, kMaxDeltaNetHeads));
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_v_heads, required(file, c, kTimeStepRank, kMaxDeltaNetHeads));
  PAGODA_ASSIGN_OR_RETURN(const int32_t inner, required(file, c, kInnerSize, kMaxDeltaNetHeads * kernels::kMaxDeltaNetHeadDim));
  if (c.delta_net_v_heads % c.delta_net_k_heads != 0)
    return make_error(fmt::format("{}: {} {} is not a multiple of {} {}", file.name(), arch_key(c, kTimeStepRank),
                                  c.delta_net_v_heads, arch_key(c, kGroupCount), c.delta_net_k_heads));
  if (inner != c.delta_net_value_dim())
    return make_error(fmt::format("{}: {} = {} but value heads of the key heads' width {} need {} x {}", file.name(),
                                  arch_key(c, kInnerSize), inner, c.delta_net_head_dim, c.delta_net_v_heads,
                                  c.delta_net_head_dim));
  c.layer_is_conv.clear();
  if (const format::GgufValue* v = file.find(arch_key(c, kRecurrentLayers)); v != nullptr) {
    if (v->type != format::GgufValueType::kArray || v->array.size() < size_t(c.num_layers))
      return make_error(fmt::format("{}: {} must hold a bool per layer", file.name(), arch_key(c, kRecurrentLayers)));
    for (int32_t l = 0; l < c.num_layers; ++l) {
      const format::GgufValue& e = v->array[size_t(l)];
      if (e.type == format::GgufValueType::kArray || e.type == format::GgufValueType::kString)
        return make_error(fmt::format("{}: {} must hold booleans", file.name(), arch_key(c, kRecurrentLayers)));
      c.layer_is_conv.push_back(e.u64 != 0 || e.i64 != 0);
    }
  } else {
    PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> interval, gguf_arch_u32(file, c, kFullAttentionInterval));
    const int64_t period = interval.value_or(kDefaultFullAttentionInterval);
    if (period <= 0 || period > ModelConfigLimits::kMaxBlockCount)
      return make_error(fmt::format("{}: {} = {} is out of range", file.name(), arch_key(c, kFullAttentionInterval),
                                    period));
    for (int32_t l = 0; l < c.num_layers; ++l) c.layer_is_conv.push_back((l + 1) % period != 0);
  }
  if (c.num_conv_layers() == c.num_layers)
    return make_error(fmt::format("{}: no full-attention layer among the {} layers (pagoda needs one)", file.name(),
                                  c.num_layers));
  c.attn_output_gate = true;
  c.ffn_norm_is_post_attention_norm = true;
  return Status::ok_status();
}

void write_gguf_gated_delta_net(const ModelConfig& c, format::GgufWriter& w) {
  using format::GgufValue;
  w.set(arch_key(c, kConvKernel), GgufValue::u32(uint32_t(c.delta_net_conv_kernel)));
  w.set(arch_key(c, kStateSize), GgufValue::u32(uint32_t(c.delta_net_head_dim)));
  w.set(arch_key(c, kGroupCount), GgufValue::u32(uint32_t(c.delta_net_k_heads)));
  w.set(arch_key(c, kTimeStepRank), GgufValue::u32(uint32_t(c.delta_net_v_heads)));
  w.set(arch_key(c, kInnerSize), GgufValue::u32(uint32_t(c.delta_net_value_dim())));
  // The interval, as llama.cpp's converter writes it; the per-layer list only where the layers follow another pattern.
  w.set(arch_key(c, kFullAttentionInterval), GgufValue::u32(uint32_t(kDefaultFullAttentionInterval)));
  bool periodic = true;
  for (int32_t l = 0; l < c.num_layers; ++l)
    periodic = periodic && c.is_conv_layer(l) == ((l + 1) % kDefaultFullAttentionInterval != 0);
  if (!periodic) {
    std::vector<GgufValue> recurrent;
    for (int32_t l = 0; l < c.num_layers; ++l) recurrent.push_back(GgufValue::boolean(c.is_conv_layer(l)));
    w.set(arch_key(c, kRecurrentLayers), GgufValue::array_of(format::GgufValueType::kBool, std::move(recurrent)));
  }
}

namespace {

Status read_qwen35_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_gated_delta_net(file, c));
  // Text positions put every M-RoPE section at the token's position: the sections only need to fit the rotation.
  if (file.find(arch_key(c, kRopeSections)) != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(auto sections, file.get_i32_array(arch_key(c, kRopeSections)));
    int64_t sum = 0;
    for (int32_t s : *sections) {
      if (s < 0) return make_error(fmt::format("{}: {} holds a negative count", file.name(), arch_key(c, kRopeSections)));
      sum += s;
    }
    if (sum > c.rope_dim / 2)
      return make_error(fmt::format("{}: {} sum to {} pairs, past rope.dimension_count {}", file.name(),
                                    arch_key(c, kRopeSections), sum, c.rope_dim));
  }
  return Status::ok_status();
}

void write_qwen35_gguf(const ModelConfig& c, format::GgufWriter& w) {
  using format::GgufValue;
  write_gguf_gated_delta_net(c, w);
  // Qwen3.5's interleaved M-RoPE sections (llama.cpp's converter's default), scaled to the rotated pairs.
  const int32_t pairs = c.rope_dim / 2, t = (pairs * 11 + 31) / 32, h = (pairs * 11 + 31) / 32;
  std::vector<GgufValue> sections;
  for (int32_t s : {t, h, pairs - t - h, 0}) sections.push_back(GgufValue::i32(s));
  w.set(arch_key(c, kRopeSections), GgufValue::array_of(format::GgufValueType::kInt32, std::move(sections)));
}

Status read_qwen35moe_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_qwen35_gguf(file, c));
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0)
    return make_error(fmt::format("{}: qwen35moe needs qwen35moe.expert_count and expert_used_count", file.name()));
  PAGODA_RETURN_IF_ERROR(read_gguf_shared_expert(file, 0, c));
  c.shared_expert_gated = c.shared_expert_hidden_dim > 0;
  c.expert_weights_norm = true;
  return Status::ok_status();
}

void write_qwen35moe_gguf(const ModelConfig& c, format::GgufWriter& w) {
  write_qwen35_gguf(c, w);
  write_gguf_experts(c, w);
  write_gguf_shared_expert(c, w);
}

// Qwen3.5's HF folders (Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM), read as llama.cpp's converter writes them:
// the value heads of the DeltaNet tensors from grouped by key head to tiled order (value head r * K + g is the
// folder's g * R + r, for K key heads of R value heads each: in_proj_qkv's V rows, in_proj_z's rows, in_proj_a/b's,
// A_log and dt_bias, conv1d's V channels, out_proj's columns), A_log as -exp(A_log), conv1d's [C, 1, L] taps as
// [L, C] f32, every RMSNorm but the DeltaNet output norm as 1 + w.

}  // namespace

Status read_hf_gated_delta_net(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_conv_kernel, f.positive_int("linear_conv_kernel_dim", kMaxConvKernel));
  if (c.delta_net_conv_kernel < 2) return f.error("linear_conv_kernel_dim must be at least 2");
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_head_dim, f.positive_int("linear_key_head_dim", kernels::kMaxDeltaNetHeadDim));
  PAGODA_ASSIGN_OR_RETURN(const int32_t value_head_dim,
                          f.positive_int("linear_value_head_dim", kernels::kMaxDeltaNetHeadDim));
  if (value_head_dim != c.delta_net_head_dim)
    return f.error(fmt::format("linear_value_head_dim {} differs from linear_key_head_dim {} (pagoda needs them equal)",
                               value_head_dim, c.delta_net_head_dim));
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_k_heads, f.positive_int("linear_num_key_heads", kMaxDeltaNetHeads));
  PAGODA_ASSIGN_OR_RETURN(c.delta_net_v_heads, f.positive_int("linear_num_value_heads", kMaxDeltaNetHeads));
  if (c.delta_net_v_heads % c.delta_net_k_heads != 0)
    return f.error(fmt::format("linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                               c.delta_net_v_heads, c.delta_net_k_heads));
  c.layer_is_conv.clear();
  if (f.has("layer_types")) {
    PAGODA_ASSIGN_OR_RETURN(const std::vector<std::string> types, f.strings("layer_types"));
    if (types.size() != size_t(c.num_layers))
      return f.error(fmt::format("layer_types has {} entries for {} layers", types.size(), c.num_layers));
    for (const std::string& t : types) {
      if (t != "linear_attention" && t != "full_attention")
        return f.error(fmt::format("layer_types entry \"{}\" is not supported (linear_attention, full_attention)", t));
      c.layer_is_conv.push_back(t == "linear_attention");
    }
  } else {
    PAGODA_ASSIGN_OR_RETURN(const int32_t interval,
                            f.positive_int_or("full_attention_interval", kDefaultFullAttentionInterval,
                                              ModelConfigLimits::kMaxBlockCount));
    for (int32_t l = 0; l < c.num_layers; ++l) c.layer_is_conv.push_back((l + 1) % interval != 0);
  }
  if (c.num_conv_layers() == c.num_layers)
    return f.error(fmt::format("no full-attention layer among the {} layers (pagoda needs one)", c.num_layers));
  // partial_rotary_factor: in rope_parameters (transformers' newer layout) or beside it.
  double factor = 0.25;
  if (f.has("rope_parameters")) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rp, f.object("rope_parameters"));
    PAGODA_ASSIGN_OR_RETURN(factor, rp.positive_number_or("partial_rotary_factor", factor, 1.0));
  }
  PAGODA_ASSIGN_OR_RETURN(factor, f.positive_number_or("partial_rotary_factor", factor, 1.0));
  c.rope_dim = int32_t(double(c.head_dim) * factor);
  if (c.rope_dim < 2 || c.rope_dim % 2 != 0)
    return f.error(fmt::format("partial_rotary_factor {} of head_dim {} is not an even count of dims", factor,
                               c.head_dim));
  if (h.qkv_bias) return f.error("attention_bias is not supported for the gated DeltaNet hybrids");
  h.norms_plus_one = true;
  c.attn_output_gate = true;
  c.ffn_norm_is_post_attention_norm = true;
  return Status::ok_status();
}

namespace {

Status read_qwen35_config(const HfConfigFields& f, HfConfig& h) { return read_hf_gated_delta_net(f, h); }

Status read_qwen35moe_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_qwen35_config(f, h));
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_experts", ModelConfigLimits::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int("num_experts_per_tok", c.num_experts));
  PAGODA_ASSIGN_OR_RETURN(c.expert_hidden_dim,
                          f.positive_int("moe_intermediate_size", ModelConfigLimits::kMaxFeedForwardLength));
  PAGODA_ASSIGN_OR_RETURN(c.shared_expert_hidden_dim,
                          f.int_or("shared_expert_intermediate_size", 0, ModelConfigLimits::kMaxFeedForwardLength));
  c.shared_expert_gated = c.shared_expert_hidden_dim > 0;
  c.expert_weights_norm = true;  // llama.cpp renormalizes qwen35moe's top-k whatever norm_topk_prob says
  return Status::ok_status();
}

void write_qwen35_config(const HfConfig& h, nlohmann::ordered_json& j) {
  const ModelConfig& c = h.config;
  j["model_type"] = c.num_experts > 0 ? "qwen3_5_moe_text" : "qwen3_5_text";
  j["linear_conv_kernel_dim"] = c.delta_net_conv_kernel;
  j["linear_key_head_dim"] = c.delta_net_head_dim;
  j["linear_value_head_dim"] = c.delta_net_head_dim;
  j["linear_num_key_heads"] = c.delta_net_k_heads;
  j["linear_num_value_heads"] = c.delta_net_v_heads;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int32_t l = 0; l < c.num_layers; ++l) types.push_back(c.is_conv_layer(l) ? "linear_attention" : "full_attention");
  j["layer_types"] = types;
  j["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", c.rope_theta},
                          {"partial_rotary_factor", double(c.rope_dim) / double(c.head_dim)},
                          {"mrope_interleaved", true}};
  if (c.num_experts > 0) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_used;
    j["moe_intermediate_size"] = c.expert_hidden_dim;
    j["shared_expert_intermediate_size"] = c.shared_expert_hidden_dim;
    j["norm_topk_prob"] = true;
  }
}

void qwen35_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim;
  const int64_t conv_dim = c.delta_net_conv_dim(), value_dim = c.delta_net_value_dim(), v_heads = c.delta_net_v_heads;
  const std::string p = fmt::format("model.layers.{}.", layer);
  out.push_back({p + "input_layernorm.weight", {}, t::block_tensor(layer, t::kAttnNorm), {dim}, "hidden_size",
                 Kind::kNorm, Rewrite::kAddOne});
  if (c.is_conv_layer(layer)) {
    const std::string a = p + "linear_attn.";
    const char* heads = "linear_num_value_heads";
    out.push_back({a + "in_proj_qkv.weight", {}, t::block_tensor(layer, t::kAttnQkv), {conv_dim, dim},
                   "2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * linear_value_head_dim, "
                   "hidden_size",
                   Kind::kMatrix, Rewrite::kTileQkvVHeads});
    out.push_back({a + "in_proj_z.weight", {}, t::block_tensor(layer, t::kAttnGate), {value_dim, dim},
                   "linear_num_value_heads * linear_value_head_dim, hidden_size", Kind::kMatrix,
                   Rewrite::kTileVHeadRows});
    out.push_back({a + "conv1d.weight", {}, t::block_tensor(layer, t::kSsmConv1d), {conv_dim, 1, c.delta_net_conv_kernel},
                   "conv channels, 1, linear_conv_kernel_dim", Kind::kNorm, Rewrite::kTileConvVHeads});
    out.push_back({a + "dt_bias", {}, t::block_tensor(layer, t::kSsmDt, "bias"), {v_heads}, heads, Kind::kBias,
                   Rewrite::kTileVHeadRows});
    out.push_back({a + "A_log", {}, t::block_tensor(layer, t::kSsmA, ""), {v_heads}, heads, Kind::kBias,
                   Rewrite::kTileNegExpVHeads});
    out.push_back({a + "in_proj_b.weight", {}, t::block_tensor(layer, t::kSsmBeta), {v_heads, dim},
                   "linear_num_value_heads, hidden_size", Kind::kMatrix, Rewrite::kTileVHeadRows});
    out.push_back({a + "in_proj_a.weight", {}, t::block_tensor(layer, t::kSsmAlpha), {v_heads, dim},
                   "linear_num_value_heads, hidden_size", Kind::kMatrix, Rewrite::kTileVHeadRows});
    out.push_back({a + "norm.weight", {}, t::block_tensor(layer, t::kSsmNorm), {c.delta_net_head_dim},
                   "linear_value_head_dim", Kind::kNorm});
    out.push_back({a + "out_proj.weight", {}, t::block_tensor(layer, t::kSsmOut), {dim, value_dim},
                   "hidden_size, linear_num_value_heads * linear_value_head_dim", Kind::kMatrix,
                   Rewrite::kTileVHeadCols});
  } else {
    append_hf_gated_attention_tensors(h, layer, out);
  }
  append_hf_gated_hybrid_ffn_tensors(h, layer, out);
}

}  // namespace

void append_hf_gated_attention_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  using Kind = HfTensor::Kind;
  using Rewrite = HfTensor::Rewrite;
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const std::string a = fmt::format("model.layers.{}.self_attn.", layer);
  out.push_back({a + "q_proj.weight", {}, t::block_tensor(layer, t::kAttnQ), {2 * q_dim, dim},
                 "2 * num_attention_heads * head_dim (query and gate), hidden_size"});
  out.push_back({a + "k_proj.weight", {}, t::block_tensor(layer, t::kAttnK), {kv_dim, dim},
                 "num_key_value_heads * head_dim, hidden_size"});
  out.push_back({a + "v_proj.weight", {}, t::block_tensor(layer, t::kAttnV), {kv_dim, dim},
                 "num_key_value_heads * head_dim, hidden_size"});
  out.push_back({a + "o_proj.weight", {}, t::block_tensor(layer, t::kAttnOutput), {dim, q_dim},
                 "hidden_size, num_attention_heads * head_dim"});
  out.push_back({a + "q_norm.weight", {}, t::block_tensor(layer, t::kAttnQNorm), {c.head_dim}, "head_dim",
                 Kind::kNorm, Rewrite::kAddOne});
  out.push_back({a + "k_norm.weight", {}, t::block_tensor(layer, t::kAttnKNorm), {c.head_dim}, "head_dim",
                 Kind::kNorm, Rewrite::kAddOne});
}

void append_hf_gated_hybrid_ffn_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  namespace t = format::gguf_tensor;
  const ModelConfig& c = h.config;
  const std::string p = fmt::format("model.layers.{}.", layer);
  const size_t ffn_begin = out.size();
  if (c.num_experts > 0) {
    append_hf_moe_tensors(h, layer, "mlp.gate.weight", "mlp.experts.{expert}.{proj}.weight", "gate_proj", "up_proj",
                          "down_proj", out);
    if (c.shared_expert_hidden_dim > 0)
      append_hf_shared_expert_tensors(h, layer, "mlp.shared_expert.{proj}.weight", "gate_proj", "up_proj",
                                      "down_proj", "mlp.shared_expert_gate.weight", out);
  } else {
    append_hf_dense_ffn_tensors(h, layer, out);
  }
  // The pre-FFN norm is GGUF's post_attention_norm here, and 1 + w like the others.
  for (size_t i = ffn_begin; i < out.size(); ++i)
    if (out[i].hf_name == p + "post_attention_layernorm.weight") {
      out[i].gguf_name = t::block_tensor(layer, t::kPostAttentionNorm);
      out[i].rewrite = HfTensor::Rewrite::kAddOne;
    }
}

extern const ArchitectureFamily kQwen35Family{"qwen35", true, read_qwen35_gguf, write_qwen35_gguf};
extern const ArchitectureFamily kQwen35MoeFamily{"qwen35moe", true, read_qwen35moe_gguf, write_qwen35moe_gguf};
// Qwen's published checkpoints are the multimodal ones (model/architecture.h's multimodal_architecture).
extern const HfFamily kQwen35Hf{"Qwen3_5ForCausalLM", "qwen35", "", read_qwen35_config, write_qwen35_config,
                                qwen35_layer_tensors, nullptr, "Qwen3_5ForConditionalGeneration"};
extern const HfFamily kQwen35MoeHf{"Qwen3_5MoeForCausalLM", "qwen35moe", "", read_qwen35moe_config,
                                   write_qwen35_config, qwen35_layer_tensors, nullptr,
                                   "Qwen3_5MoeForConditionalGeneration"};

}  // namespace pagoda
