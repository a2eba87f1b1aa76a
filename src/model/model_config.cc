// Reads ModelConfig from GGUF metadata with llama.cpp's key names (`<arch>.embedding_length`, ...).
#include "model/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/rope_scaling.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

Result<int32_t> required_u32(const format::GgufFile& f, const std::string& key, int32_t max_value) {
  PAGODA_ASSIGN_OR_RETURN(auto v, f.get_u32(key));
  if (!v) return make_error(fmt::format("{}: missing metadata key {}", f.name(), key));
  if (*v == 0 || *v > uint32_t(max_value))
    return make_error(fmt::format("{}: {} = {} is out of range (1..{})", f.name(), key, *v, max_value));
  return int32_t(*v);
}

}  // namespace

Result<ModelConfig> model_config_from_gguf(const format::GgufFile& f) {
  ModelConfig c;
  PAGODA_ASSIGN_OR_RETURN(auto arch, f.get_string(gguf_key::kArchitecture));
  if (!arch) return make_error(fmt::format("{}: missing metadata key general.architecture", f.name()));
  c.architecture = *arch;
  const ArchitectureFamily* family = find_architecture(c.architecture);
  if (family == nullptr)
    return make_error(fmt::format("{}: unknown architecture '{}' (supported: {})", f.name(), c.architecture,
                                  supported_architecture_names()));
  PAGODA_ASSIGN_OR_RETURN(auto name, f.get_string(gguf_key::kName));
  c.name = name.value_or("");
  const std::string a = c.architecture + ".";
  PAGODA_ASSIGN_OR_RETURN(c.dim, required_u32(f, arch_key(c, gguf_key::kEmbeddingLength), Limits::kMaxEmbeddingLength));
  PAGODA_ASSIGN_OR_RETURN(c.num_layers, required_u32(f, arch_key(c, gguf_key::kBlockCount), Limits::kMaxBlockCount));
  const format::GgufValue* ff = f.find(arch_key(c, gguf_key::kFeedForwardLength));
  if (ff != nullptr && ff->type == format::GgufValueType::kArray) {
    // One width per layer (Gemma 4's wider FFN in its KV-sharing layers); hidden_dim is the widest.
    PAGODA_ASSIGN_OR_RETURN(auto widths, f.get_i32_array(arch_key(c, gguf_key::kFeedForwardLength)));
    if (widths->size() != size_t(c.num_layers))
      return make_error(fmt::format("{}: {}feed_forward_length has {} entries for {} layers", f.name(), a,
                                    widths->size(), c.num_layers));
    for (int32_t w : *widths) {
      if (w <= 0 || w > Limits::kMaxFeedForwardLength)
        return make_error(fmt::format("{}: {}feed_forward_length entry {} is out of range", f.name(), a, w));
      c.hidden_dim = std::max(c.hidden_dim, w);
    }
    c.layer_hidden_dims = std::move(*widths);
  } else {
    PAGODA_ASSIGN_OR_RETURN(c.hidden_dim,
                            required_u32(f, arch_key(c, gguf_key::kFeedForwardLength), Limits::kMaxFeedForwardLength));
  }
  PAGODA_ASSIGN_OR_RETURN(c.num_heads, required_u32(f, arch_key(c, gguf_key::kHeadCount), Limits::kMaxHeadCount));
  PAGODA_ASSIGN_OR_RETURN(c.context_length,
                          required_u32(f, arch_key(c, gguf_key::kContextLength), Limits::kMaxContextLength));
  c.num_kv_heads = c.num_heads;
  const std::string kv_heads_key = arch_key(c, gguf_key::kHeadCountKv);
  if (const format::GgufValue* v = f.find(kv_heads_key); v != nullptr && v->type == format::GgufValueType::kArray) {
    // Per layer, as llama.cpp's hybrid converters write it: 0 on a recurrent layer, one count on the others.
    PAGODA_ASSIGN_OR_RETURN(auto counts, f.get_i32_array(kv_heads_key));
    if (counts->size() != size_t(c.num_layers))
      return make_error(fmt::format("{}: {} has {} entries for {} blocks", f.name(), kv_heads_key, counts->size(),
                                    c.num_layers));
    // Attention layers of different counts (Gemma 4's full layers) keep them per layer.
    c.num_kv_heads = 0;
    bool differ = false;
    for (int32_t n : *counts) {
      if (n < 0 || n > c.num_heads || (n > 0 && c.num_heads % n != 0))
        return make_error(fmt::format("{}: {} must hold 0 (a recurrent layer) or a divisor of head_count {} for every "
                                      "other layer",
                                      f.name(), kv_heads_key, c.num_heads));
      differ |= n > 0 && c.num_kv_heads > 0 && n != c.num_kv_heads;
      c.num_kv_heads = std::max(c.num_kv_heads, n);
    }
    if (c.num_kv_heads == 0) return make_error(fmt::format("{}: {} has no attention layer", f.name(), kv_heads_key));
    for (int32_t n : *counts) c.layer_is_conv.push_back(n == 0);
    if (differ) c.layer_kv_heads = *counts;
    if (std::find(counts->begin(), counts->end(), 0) == counts->end()) c.layer_is_conv.clear();
  } else if (v != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.num_kv_heads, required_u32(f, kv_heads_key, c.num_heads));
  }
  // Each block is at least its 6 tensors (Phi-3's, with fused QKV and gate/up): a block count the file cannot hold
  // fails here, before the loader sizes anything by it.
  if (size_t(c.num_layers) > f.tensors().size() / 6)
    return make_error(fmt::format("{}: {}block_count = {} but the file has only {} tensors", f.name(), a, c.num_layers,
                                  f.tensors().size()));
  PAGODA_ASSIGN_OR_RETURN(auto eps, f.get_f32(arch_key(c, gguf_key::kRmsEpsilon)));
  if (eps) c.rms_eps = *eps;
  PAGODA_ASSIGN_OR_RETURN(auto theta, f.get_f32(arch_key(c, gguf_key::kRopeFreqBase)));
  if (theta) c.rope_theta = *theta;

  if (c.dim % c.num_heads != 0 && !f.find(arch_key(c, gguf_key::kKeyLength)))
    return make_error(
        fmt::format("{}: embedding_length {} is not a multiple of head_count {}", f.name(), c.dim, c.num_heads));
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    return make_error(
        fmt::format("{}: head_count {} is not a multiple of head_count_kv {}", f.name(), c.num_heads, c.num_kv_heads));
  c.head_dim = c.dim / c.num_heads;
  PAGODA_ASSIGN_OR_RETURN(auto key_length, f.get_u32(arch_key(c, gguf_key::kKeyLength)));
  if (key_length) {
    if (*key_length == 0 || *key_length > uint32_t(Limits::kMaxHeadDim))
      return make_error(fmt::format("{}: {}attention.key_length = {} is out of range", f.name(), a, *key_length));
    c.head_dim = int32_t(*key_length);
  }
  // llama.cpp's rope type for the architecture: NeoX halves, or adjacent pairs (llama, granite).
  c.rope_neox = family->rope_neox;
  PAGODA_ASSIGN_OR_RETURN(auto rope_dim, f.get_u32(arch_key(c, gguf_key::kRopeDimensionCount)));
  c.rope_dim = rope_dim ? int32_t(*rope_dim) : c.head_dim;
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    return make_error(fmt::format("{}: rope.dimension_count {} must be even and at most the head size {}", f.name(),
                                  c.rope_dim, c.head_dim));
  if (!(c.rms_eps > 0.0f) || !(c.rope_theta > 0.0f))
    return make_error(fmt::format("{}: layer_norm_rms_epsilon and rope.freq_base must be positive", f.name()));

  // The vocabulary size is the embedding's outer dimension (llama.vocab_size is optional in GGUF).
  const format::GgufTensorInfo* embd = f.find_tensor(format::gguf_tensor::kTokenEmbedding);
  if (embd == nullptr) return make_error(fmt::format("{}: missing tensor token_embd.weight", f.name()));
  if (embd->dims.size() != 2 || embd->dims[0] != c.dim)
    return make_error(fmt::format("{}: token_embd.weight must be [{}, vocab]", f.name(), c.dim));
  if (embd->dims[1] <= 0 || embd->dims[1] > Limits::kMaxVocabSize)
    return make_error(fmt::format("{}: token_embd.weight has a vocabulary of {} tokens, out of range (1..{})", f.name(),
                                  embd->dims[1], Limits::kMaxVocabSize));
  c.vocab_size = int32_t(embd->dims[1]);
  if (const format::GgufTensorInfo* rf = f.find_tensor("rope_freqs.weight")) {
    if (rf->type != format::GgmlType::kF32 || rf->dims != std::vector<int64_t>{c.rope_dim / 2})
      return make_error(fmt::format("{}: rope_freqs.weight must be f32 [{}]", f.name(), c.rope_dim / 2));
    const float* v = static_cast<const float*>(rf->data);
    c.rope_freq_factors.assign(v, v + c.rope_dim / 2);
  }
  // RoPE scaling (llama.cpp's keys and defaults: linear unless the file says otherwise).
  PAGODA_ASSIGN_OR_RETURN(auto scaling_type, f.get_string(arch_key(c, gguf_key::kRopeScalingType)));
  const std::optional<RopeScalingType> type = parse_rope_scaling_type(scaling_type.value_or("linear"));
  if (!type || (*type == RopeScalingType::kLongRope && c.architecture != "phi3"))
    return make_error(fmt::format("{}: {}rope.scaling.type '{}' is not supported (none, linear, yarn{})", f.name(), a,
                                  scaling_type.value_or(""), c.architecture == "phi3" ? ", longrope" : ""));
  c.rope_scaling = *type;
  PAGODA_ASSIGN_OR_RETURN(auto scaling_factor, f.get_f32(arch_key(c, gguf_key::kRopeScalingFactor)));
  if (!scaling_factor) {
    PAGODA_ASSIGN_OR_RETURN(scaling_factor, f.get_f32(arch_key(c, gguf_key::kRopeScaleLinear)));
  }
  if (scaling_factor && *scaling_factor != 0.0f && c.rope_scaling != RopeScalingType::kNone) {
    if (!(*scaling_factor > 0.0f) || !std::isfinite(*scaling_factor))
      return make_error(fmt::format("{}: {}rope.scaling.factor must be positive", f.name(), a));
    c.rope_freq_scale = 1.0f / *scaling_factor;
  }
  PAGODA_ASSIGN_OR_RETURN(auto original, f.get_u32(arch_key(c, gguf_key::kRopeScalingOriginalContext)));
  if (original && (*original == 0 || *original > uint32_t(Limits::kMaxContextLength)))
    return make_error(fmt::format("{}: {}rope.scaling.original_context_length = {} is out of range (1..{})", f.name(),
                                  a, *original, Limits::kMaxContextLength));
  c.rope_original_context = original ? int32_t(*original) : c.context_length;
  const std::pair<const char*, float*> floats[] = {
      {gguf_key::kRopeScalingAttnFactor, &c.rope_attn_factor},
      {gguf_key::kRopeScalingYarnExtFactor, &c.yarn_ext_factor},
      {gguf_key::kRopeScalingYarnAttnFactor, &c.yarn_attn_factor},
      {gguf_key::kRopeScalingYarnBetaFast, &c.yarn_beta_fast},
      {gguf_key::kRopeScalingYarnBetaSlow, &c.yarn_beta_slow},
      {gguf_key::kRopeScalingYarnLogMultiplier, &c.yarn_log_multiplier},
  };
  for (const auto& [key, field] : floats) {
    PAGODA_ASSIGN_OR_RETURN(auto v, f.get_f32(arch_key(c, key)));
    if (v) *field = *v;
  }
  PAGODA_RETURN_IF_ERROR(check_rope_scaling(c, f.name()));
  if (family->read_gguf != nullptr) PAGODA_RETURN_IF_ERROR(family->read_gguf(f, c));
  // The last block ends in its attention output or, on a recurrent layer, its short convolution's or DeltaNet's.
  const int32_t last = c.num_layers - 1;
  const std::string last_block_tensor = format::gguf_tensor::block_tensor(
      last, !c.is_conv_layer(last) ? format::gguf_tensor::kAttnOutput
            : c.is_delta_net()     ? format::gguf_tensor::kSsmOut
                                   : format::gguf_tensor::kShortConvOutProj);
  if (f.find_tensor(last_block_tensor) == nullptr)
    return make_error(fmt::format("{}: {}block_count = {} but the file has no tensor {} ({} tensors in all)", f.name(),
                                  a, c.num_layers, last_block_tensor, f.tensors().size()));
  if (!c.layer_is_conv.empty() && c.shortconv_l_cache < 2 && !c.is_delta_net())
    return make_error(fmt::format("{}: {}attention.head_count_kv is 0 on some layers, but {} has no recurrent layers",
                                  f.name(), a, c.architecture));
  if (c.num_experts > 0 && c.num_experts_used > c.num_experts)
    return make_error(
        fmt::format("{}: expert_used_count {} exceeds expert_count {}", f.name(), c.num_experts_used, c.num_experts));
  return c;
}

}  // namespace pagoda
