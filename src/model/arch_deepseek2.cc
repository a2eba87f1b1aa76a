// The deepseek2 family (DeepSeek-V2 and -V2-Lite, V3's layout; llama.cpp's LLM_ARCH_DEEPSEEK2) as llama.cpp's
// converter writes it with multi-head latent attention split for absorption: attn_kv_a_mqa gives each token its latent
// (attention.kv_lora_rank values) and its shared rope key (rope.dimension_count), attn_kv_a_norm norms the latent,
// attn_k_b and attn_v_b are per-head [kv_lora_rank x nope] and [value_length_mla x kv_lora_rank] matrices; the query
// is attn_q or the q LoRA (attn_q_a, attn_q_a_norm, attn_q_b; attention.q_lora_rank). The file says
// head_count_kv 1, key_length kv_lora_rank + rope dims and value_length kv_lora_rank (the cache's row, as llama.cpp
// stores it), key_length_mla and value_length_mla the heads' own sizes; ModelConfig::mla_* holds them. RoPE on
// adjacent pairs; YaRN's magnitude goes into the score scale (rope_tables.h's mla_score_scale, llama.cpp's deepseek2
// mscale; rope.scaling.yarn_log_multiplier is 0.1 * HF's mscale_all_dim, as the converter writes it). The FFN: the
// first leading_dense_block_count layers dense, the others a mixture of experts (expert_gating_func 1 softmax or 2
// sigmoid, with the selection bias exp_probs_b when the file has it; expert_group_count groups of which
// expert_group_used_count are chosen from; expert_weights_norm, expert_weights_scale) beside expert_shared_count shared
// experts run as one ungated FFN of that many times expert_feed_forward_length units. Files from before the split
// (attn_kv_b, no key_length_mla) are refused by name. No HF folder (DeepseekV2ForCausalLM) is read yet.
#include <fmt/format.h>

#include <algorithm>

#include "model/architecture.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

constexpr const char* kQLoraRank = "attention.q_lora_rank";
constexpr const char* kKvLoraRank = "attention.kv_lora_rank";
constexpr const char* kKeyLengthMla = "attention.key_length_mla";
constexpr const char* kValueLengthMla = "attention.value_length_mla";
constexpr const char* kLeadingDenseBlockCount = "leading_dense_block_count";
constexpr const char* kExpertSharedCount = "expert_shared_count";
constexpr const char* kExpertWeightsNorm = "expert_weights_norm";
constexpr const char* kExpertGatingFunc = "expert_gating_func";
constexpr const char* kExpertGroupCount = "expert_group_count";
constexpr const char* kExpertGroupUsedCount = "expert_group_used_count";
// llama.cpp's llama_expert_gating_func_type values the family uses.
constexpr uint32_t kGatingSoftmax = 1;
constexpr uint32_t kGatingSigmoid = 2;

// An optional u32 key in 0..max_value (`fallback` when absent).
Result<int32_t> u32_in_range(const format::GgufFile& file, const ModelConfig& c, const char* suffix, int32_t max_value,
                             int32_t fallback) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> v, gguf_arch_u32(file, c, suffix));
  if (!v) return fallback;
  if (*v > uint32_t(max_value))
    return make_error(fmt::format("{}: {} = {} is out of range (0..{})", file.name(), arch_key(c, suffix), *v,
                                  max_value));
  return int32_t(*v);
}

Status read_deepseek2_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> key_mla, gguf_arch_u32(file, c, kKeyLengthMla));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> value_mla, gguf_arch_u32(file, c, kValueLengthMla));
  if (!key_mla || !value_mla)
    return make_error(fmt::format("{}: deepseek2 without {} and {} (a file converted before llama.cpp split attn_kv_b "
                                  "for the absorbed attention) is not read; convert the model again",
                                  file.name(), arch_key(c, kKeyLengthMla), arch_key(c, kValueLengthMla)));
  PAGODA_ASSIGN_OR_RETURN(c.mla_kv_lora_rank, u32_in_range(file, c, kKvLoraRank, Limits::kMaxHeadDim, 0));
  PAGODA_ASSIGN_OR_RETURN(c.mla_q_lora_rank, u32_in_range(file, c, kQLoraRank, Limits::kMaxEmbeddingLength, 0));
  if (c.mla_kv_lora_rank == 0)
    return make_error(fmt::format("{}: deepseek2 needs {}", file.name(), arch_key(c, kKvLoraRank)));
  c.mla_key_dim = int32_t(std::min<uint32_t>(*key_mla, uint32_t(Limits::kMaxHeadDim) + 1));
  c.mla_value_dim = int32_t(std::min<uint32_t>(*value_mla, uint32_t(Limits::kMaxHeadDim) + 1));
  if (c.mla_key_dim <= c.rope_dim || c.mla_key_dim > Limits::kMaxHeadDim || c.mla_value_dim <= 0 ||
      c.mla_value_dim > Limits::kMaxHeadDim)
    return make_error(fmt::format("{}: {} = {} must exceed rope.dimension_count {} and {} = {} be positive (both at "
                                  "most {})",
                                  file.name(), arch_key(c, kKeyLengthMla), *key_mla, c.rope_dim,
                                  arch_key(c, kValueLengthMla), *value_mla, Limits::kMaxHeadDim));
  // The cache's row: the latent and the rope key, one KV head.
  if (c.num_kv_heads != 1 || c.head_dim != c.mla_kv_lora_rank + c.rope_dim)
    return make_error(fmt::format("{}: deepseek2's cache row needs head_count_kv 1 and key_length = kv_lora_rank + "
                                  "rope.dimension_count ({}), not {} and {}",
                                  file.name(), c.mla_kv_lora_rank + c.rope_dim, c.num_kv_heads, c.head_dim));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> value_length, gguf_arch_u32(file, c, gguf_key::kValueLength));
  if (value_length && *value_length != uint32_t(c.mla_kv_lora_rank))
    return make_error(fmt::format("{}: {} = {} must be kv_lora_rank {}", file.name(),
                                  arch_key(c, gguf_key::kValueLength), *value_length, c.mla_kv_lora_rank));
  PAGODA_ASSIGN_OR_RETURN(c.leading_dense_layers,
                          u32_in_range(file, c, kLeadingDenseBlockCount, c.num_layers, 0));
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  if (c.num_experts == 0 && c.leading_dense_layers < c.num_layers)
    return make_error(fmt::format("{}: deepseek2 has MoE layers past {} but no {}", file.name(),
                                  arch_key(c, kLeadingDenseBlockCount), arch_key(c, family_key::kExpertCount)));
  PAGODA_ASSIGN_OR_RETURN(const int32_t shared, u32_in_range(file, c, kExpertSharedCount, Limits::kMaxExperts, 0));
  if (int64_t(shared) * c.expert_hidden_dim > Limits::kMaxFeedForwardLength)
    return make_error(fmt::format("{}: {} = {} experts of {} units is out of range", file.name(),
                                  arch_key(c, kExpertSharedCount), shared, c.expert_hidden_dim));
  c.shared_expert_hidden_dim = c.num_experts > 0 ? shared * c.expert_hidden_dim : 0;
  PAGODA_ASSIGN_OR_RETURN(std::optional<bool> norm, file.get_bool(arch_key(c, kExpertWeightsNorm)));
  c.expert_weights_norm = norm.value_or(false);
  PAGODA_ASSIGN_OR_RETURN(const int32_t gating, u32_in_range(file, c, kExpertGatingFunc, 1 << 16, 0));
  if (gating != 0 && uint32_t(gating) != kGatingSoftmax && uint32_t(gating) != kGatingSigmoid)
    return make_error(fmt::format("{}: {} = {} is not supported (1: softmax, 2: sigmoid)", file.name(),
                                  arch_key(c, kExpertGatingFunc), gating));
  c.expert_gating_sigmoid = uint32_t(gating) == kGatingSigmoid;
  PAGODA_ASSIGN_OR_RETURN(c.expert_groups, u32_in_range(file, c, kExpertGroupCount, Limits::kMaxExperts, 0));
  PAGODA_ASSIGN_OR_RETURN(c.expert_groups_used, u32_in_range(file, c, kExpertGroupUsedCount, Limits::kMaxExperts, 0));
  if (c.expert_groups > 1 &&
      (c.num_experts % c.expert_groups != 0 || c.expert_groups_used < 1 || c.expert_groups_used >= c.expert_groups ||
       c.num_experts / c.expert_groups < 2 ||
       c.num_experts_used > c.expert_groups_used * (c.num_experts / c.expert_groups)))
    return make_error(fmt::format("{}: {} = {} and {} = {} do not divide {} experts into groups that hold the {} "
                                  "chosen",
                                  file.name(), arch_key(c, kExpertGroupCount), c.expert_groups,
                                  arch_key(c, kExpertGroupUsedCount), c.expert_groups_used, c.num_experts,
                                  c.num_experts_used));
  if (file.find(arch_key(c, "attention.temperature_scale")) != nullptr)
    return make_error(fmt::format("{}: {} (Mistral Large's attention temperature) is not supported", file.name(),
                                  arch_key(c, "attention.temperature_scale")));
  return Status::ok_status();
}

void write_deepseek2_gguf(const ModelConfig& c, format::GgufWriter& w) {
  using format::GgufValue;
  w.set(arch_key(c, gguf_key::kValueLength), GgufValue::u32(uint32_t(c.mla_kv_lora_rank)));
  w.set(arch_key(c, kKvLoraRank), GgufValue::u32(uint32_t(c.mla_kv_lora_rank)));
  // Written as 0 too: llama.cpp requires the key unless the layer count is a published Lite model's.
  w.set(arch_key(c, kQLoraRank), GgufValue::u32(uint32_t(c.mla_q_lora_rank)));
  w.set(arch_key(c, kKeyLengthMla), GgufValue::u32(uint32_t(c.mla_key_dim)));
  w.set(arch_key(c, kValueLengthMla), GgufValue::u32(uint32_t(c.mla_value_dim)));
  w.set(arch_key(c, kLeadingDenseBlockCount), GgufValue::u32(uint32_t(c.leading_dense_layers)));
  write_gguf_experts(c, w);
  if (c.num_experts > 0) {
    w.set(arch_key(c, kExpertSharedCount), GgufValue::u32(uint32_t(c.shared_expert_hidden_dim / c.expert_hidden_dim)));
    if (c.expert_weights_norm) w.set(arch_key(c, kExpertWeightsNorm), GgufValue::boolean(true));
    w.set(arch_key(c, kExpertGatingFunc), GgufValue::u32(c.expert_gating_sigmoid ? kGatingSigmoid : kGatingSoftmax));
    if (c.expert_groups > 1) {
      w.set(arch_key(c, kExpertGroupCount), GgufValue::u32(uint32_t(c.expert_groups)));
      w.set(arch_key(c, kExpertGroupUsedCount), GgufValue::u32(uint32_t(c.expert_groups_used)));
    }
  }
}

}  // namespace

extern const ArchitectureFamily kDeepseek2Family{"deepseek2", false, read_deepseek2_gguf, write_deepseek2_gguf};

}  // namespace pagoda
