// RoPE scaling settings: the rope.scaling.type names, the checks every source of them passes (a GGUF's keys, an HF
// config.json, a user's overrides), and the overrides themselves (llama.cpp's --rope-scaling, --rope-scale,
// --rope-freq-base, --rope-freq-scale, --yarn-* flags) applied to a ModelConfig. Plain values and functions; the
// angles they lead to are model/rope_tables.h's.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/model_config.h"

namespace pagoda {

std::string_view rope_scaling_type_name(RopeScalingType type);  // "none", "linear", "yarn", "longrope"
std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view name);

// The RoPE settings a user gives over the model file's, each unset by default. As llama.cpp's: rope_scale is the
// context scale factor (rope_freq_scale = 1 / it; rope_freq_scale wins when both are given); yarn_original_context
// is rope.scaling.original_context_length.
struct RopeScalingOverrides {
  std::optional<RopeScalingType> type;
  std::optional<float> rope_scale, rope_freq_base, rope_freq_scale;
  std::optional<float> yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
  std::optional<int32_t> yarn_original_context;
  bool empty() const {
    return !type && !rope_scale && !rope_freq_base && !rope_freq_scale && !yarn_ext_factor && !yarn_attn_factor &&
           !yarn_beta_fast && !yarn_beta_slow && !yarn_original_context;
  }
};

// The scaling fields of `c` in range: scale and base positive and finite, the YaRN betas positive with beta_fast
// above beta_slow, the original context in range. `source` starts each error
// ("model.gguf: rope.scaling.yarn_beta_fast = 0 must be positive").
Status check_rope_scaling(const ModelConfig& c, const std::string& source);

// `c` with the overrides in place (type none also sets rope_freq_scale to 1, as llama.cpp does), then checked.
Status apply_rope_overrides(const RopeScalingOverrides& overrides, ModelConfig& c);

// One line for a start-up note: "rope scaling yarn: factor 4, original context 32768, ..." (empty for none/linear
// at scale 1).
std::string describe_rope_scaling(const ModelConfig& c);

}  // namespace pagoda
