// The gpt-oss family (OpenAI's gpt-oss-20b and -120b; llama.cpp's LLM_ARCH_OPENAI_MOE, GGUF name "gpt-oss"): NeoX
// RoPE (YaRN in the released models), biases on the Q/K/V and output projections, a learned attention sink per query
// head (blk.N.attn_sinks), a sliding window (gpt-oss.attention.sliding_window) on alternate layers (the pattern's
// period 2 by default: even layers windowed), and a mixture of experts on every layer: the router (with a bias)
// picks the top-k experts by logit and softmaxes over those k only, each expert has biases on its gate, up and down
// projections and the clamped SwiGLU (FfnActivation::kSwigluOai). The pre-FFN RMSNorm is stored as
// post_attention_norm. The tensors' presence (biases, sinks) is checked by model_weights.cc; here only the keys.
// HF folders of it (GptOssForCausalLM, whose experts are one transposed, gate/up-interleaved tensor) are not read:
// hf_config.cc refuses them by name.
#include <fmt/format.h>

#include "model/architecture.h"

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

}  // namespace

extern const ArchitectureFamily kGptOssFamily{"gpt-oss", true, read_gpt_oss_gguf, write_gpt_oss_gguf};

}  // namespace pagoda
