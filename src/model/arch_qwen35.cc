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
// expert_shared_feed_forward_length. Reads no HF folder (llama.cpp's converter reorders the value heads; not done here).
#include <fmt/format.h>

#include "kernels/kernels.h"
#include "model/architecture.h"

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

Status read_qwen35_gguf(const format::GgufFile& file, ModelConfig& c) {
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
  c.attn_output_gate = true;
  c.ffn_norm_is_post_attention_norm = true;
  return Status::ok_status();
}

void write_qwen35_gguf(const ModelConfig& c, format::GgufWriter& w) {
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

}  // namespace

extern const ArchitectureFamily kQwen35Family{"qwen35", true, read_qwen35_gguf, write_qwen35_gguf};
extern const ArchitectureFamily kQwen35MoeFamily{"qwen35moe", true, read_qwen35moe_gguf, write_qwen35moe_gguf};

}  // namespace pagoda
