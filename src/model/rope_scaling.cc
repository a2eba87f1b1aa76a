// RoPE scaling settings: names, checks, overrides (rope_scaling.h).
#include "model/rope_scaling.h"

#include <fmt/format.h>

#include <cmath>

namespace pagoda {
namespace {

bool positive_finite(float v) { return v > 0.0f && std::isfinite(v); }

}  // namespace

std::string_view rope_scaling_type_name(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::kNone: return "none";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kYarn: return "yarn";
    case RopeScalingType::kLongRope: return "longrope";
  }
  return "?";
}

std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view name) {
  for (RopeScalingType t :
       {RopeScalingType::kNone, RopeScalingType::kLinear, RopeScalingType::kYarn, RopeScalingType::kLongRope})
    if (rope_scaling_type_name(t) == name) return t;
  return std::nullopt;
}

Status check_rope_scaling(const ModelConfig& c, const std::string& source) {
  const auto fail = [&](const char* key, float v, const char* rule) {
    return make_error(fmt::format("{}: {} = {} {}", source, key, v, rule));
  };
  if (!positive_finite(c.rope_theta)) return fail("rope.freq_base", c.rope_theta, "must be positive");
  if (!positive_finite(c.rope_freq_scale))
    return fail("rope frequency scale (1 / rope.scaling.factor)", c.rope_freq_scale, "must be positive");
  if (!positive_finite(c.rope_attn_factor)) return fail("rope.scaling.attn_factor", c.rope_attn_factor, "must be positive");
  if (!std::isfinite(c.yarn_ext_factor) || c.yarn_ext_factor > 1.0f)
    return fail("rope.scaling.yarn_ext_factor", c.yarn_ext_factor, "must be at most 1 (negative: unset)");
  if (!positive_finite(c.yarn_attn_factor))
    return fail("rope.scaling.yarn_attn_factor", c.yarn_attn_factor, "must be positive");
  if (!positive_finite(c.yarn_beta_fast)) return fail("rope.scaling.yarn_beta_fast", c.yarn_beta_fast, "must be positive");
  if (!positive_finite(c.yarn_beta_slow)) return fail("rope.scaling.yarn_beta_slow", c.yarn_beta_slow, "must be positive");
  if (!(c.yarn_beta_fast > c.yarn_beta_slow))
    return make_error(fmt::format("{}: rope.scaling.yarn_beta_fast {} must exceed yarn_beta_slow {}", source,
                                  c.yarn_beta_fast, c.yarn_beta_slow));
  if (!std::isfinite(c.yarn_log_multiplier) || c.yarn_log_multiplier < 0.0f)
    return fail("rope.scaling.yarn_log_multiplier", c.yarn_log_multiplier, "must be non-negative");
  if (c.rope_original_context < 0 || c.rope_original_context > ModelConfigLimits::kMaxContextLength)
    return make_error(fmt::format("{}: rope.scaling.original_context_length = {} is out of range (1..{})", source,
                                  c.rope_original_context, ModelConfigLimits::kMaxContextLength));
  return Status::ok_status();
}

Status apply_rope_overrides(const RopeScalingOverrides& o, ModelConfig& c) {
  if (o.empty()) return Status::ok_status();
  if (o.type) c.rope_scaling = *o.type;
  if (o.rope_scale) {
    if (!positive_finite(*o.rope_scale))
      return make_error(fmt::format("invalid option: --rope-scale {} must be positive", *o.rope_scale));
    c.rope_freq_scale = 1.0f / *o.rope_scale;
  }
  if (o.rope_freq_scale) c.rope_freq_scale = *o.rope_freq_scale;
  if (c.rope_scaling == RopeScalingType::kNone) c.rope_freq_scale = 1.0f;  // never scaled
  if (o.rope_freq_base) c.rope_theta = *o.rope_freq_base;
  if (o.yarn_ext_factor) c.yarn_ext_factor = *o.yarn_ext_factor;
  if (o.yarn_attn_factor) c.yarn_attn_factor = *o.yarn_attn_factor;
  if (o.yarn_beta_fast) c.yarn_beta_fast = *o.yarn_beta_fast;
  if (o.yarn_beta_slow) c.yarn_beta_slow = *o.yarn_beta_slow;
  if (o.yarn_original_context) {
    if (*o.yarn_original_context <= 0)
      return make_error(fmt::format("invalid option: --yarn-orig-ctx {} must be positive", *o.yarn_original_context));
    c.rope_original_context = *o.yarn_original_context;
  }
  return check_rope_scaling(c, "invalid option");
}

std::string describe_rope_scaling(const ModelConfig& c) {
  const std::string_view type = rope_scaling_type_name(c.rope_scaling);
  if (c.rope_scaling == RopeScalingType::kYarn || c.yarn_ext_factor > 0.0f)
    return fmt::format("rope scaling {}: factor {:g}, original context {}, freq base {:g}, ext factor {:g}, beta fast "
                       "{:g}, beta slow {:g}",
                       type, 1.0f / c.rope_freq_scale,
                       c.rope_original_context > 0 ? c.rope_original_context : c.context_length, c.rope_theta,
                       c.yarn_ext_factor >= 0.0f ? c.yarn_ext_factor : 1.0f, c.yarn_beta_fast, c.yarn_beta_slow);
  if (c.rope_freq_scale != 1.0f)
    return fmt::format("rope scaling {}: factor {:g}, freq base {:g}", type, 1.0f / c.rope_freq_scale, c.rope_theta);
  return "";
}

}  // namespace pagoda
