// RoPE's cos/sin tables (rope_tables.h).
#include "model/rope_tables.h"

#include <algorithm>
#include <cmath>

namespace pagoda {

const std::vector<float>* rope_divisors(const ModelConfig& c, int32_t rope_context) {
  if (!c.rope_long_factors.empty())
    return rope_context > c.rope_original_context ? &c.rope_long_factors : &c.rope_short_factors;
  return c.rope_freq_factors.empty() ? nullptr : &c.rope_freq_factors;
}

float yarn_get_mscale(float scale, float mscale) {
  return scale <= 1.0f ? 1.0f : 0.1f * mscale * std::log(scale) + 1.0f;
}

void yarn_corr_dims(int32_t rope_dim, int32_t original_context, float theta, float beta_fast, float beta_slow,
                    float dims[2]) {
  // The pair whose wavelength turns `rotations` times over the original context.
  const auto corr_dim = [&](float rotations) {
    return float(rope_dim) * std::log(float(original_context) / (rotations * 2.0f * float(M_PI))) /
           (2.0f * std::log(theta));
  };
  dims[0] = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  dims[1] = std::min(float(rope_dim - 1), std::ceil(corr_dim(beta_slow)));
}

RopeParams rope_params(const ModelConfig& c, bool swa_layer) {
  RopeParams p;
  const float full_scale = c.rope_scaling == RopeScalingType::kNone ? 1.0f : c.rope_freq_scale;
  p.theta = swa_layer && c.rope_theta_swa > 0.0f ? c.rope_theta_swa : c.rope_theta;
  p.freq_scale = swa_layer && c.rope_freq_scale_swa > 0.0f ? c.rope_freq_scale_swa : full_scale;
  p.ext_factor = c.yarn_ext_factor >= 0.0f ? c.yarn_ext_factor : (c.rope_scaling == RopeScalingType::kYarn ? 1.0f : 0.0f);
  p.attn_factor = c.yarn_attn_factor;
  if (p.ext_factor != 0.0f) {
    const float factor = 1.0f / full_scale;
    p.attn_factor = c.yarn_log_multiplier != 0.0f
                        ? yarn_get_mscale(factor, 1.0f) / yarn_get_mscale(factor, c.yarn_log_multiplier)
                        : yarn_get_mscale(factor, 1.0f);
    // llama.cpp reads deepseek2's multiplier as HF's mscale and mscale_all_dim alike, whose ratio is 1.
    if (c.is_mla() && c.yarn_log_multiplier != 0.0f) p.attn_factor = 1.0f;
    p.attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));  // fill_rope_tables multiplies this back in
  }
  p.attn_factor *= c.rope_attn_factor;
  if (swa_layer && c.rope_swa_plain) {
    p.ext_factor = 0.0f;
    p.attn_factor = 1.0f;
  }
  p.rope_dim = swa_layer && c.rope_dim_swa > 0 ? c.rope_dim_swa : c.rope_dim;
  p.frequency_divisors = !(swa_layer && c.rope_factors_full_only);
  float dims[2];
  yarn_corr_dims(p.rope_dim, c.rope_original_context > 0 ? c.rope_original_context : c.context_length, p.theta,
                 c.yarn_beta_fast, c.yarn_beta_slow, dims);
  p.corr_low = dims[0];
  p.corr_high = dims[1];
  return p;
}

float mla_score_scale(const ModelConfig& c) {
  const RopeParams p = rope_params(c, false);
  const float log_inverse_scale = std::log(1.0f / p.freq_scale);
  const float attn_factor_org = p.attn_factor * (1.0f + 0.1f * log_inverse_scale);
  // The file's multiplier is 0.1 * mscale_all_dim (llama.cpp's converter); llama.cpp divides it back by 0.1.
  const float mscale = attn_factor_org * (1.0f + 0.1f * (c.yarn_log_multiplier / 0.1f) * log_inverse_scale);
  return mscale * mscale / std::sqrt(float(c.mla_key_dim));
}

void fill_rope_tables(const ModelConfig& c, std::span<const Pos> positions, const RopeParams& p, int32_t rope_context,
                      float* cos_out, float* sin_out) {
  const int32_t rope_dim = p.rope_dim > 0 ? p.rope_dim : c.rope_dim, half_rope = rope_dim / 2;
  const std::vector<float>* divisors = p.frequency_divisors ? rope_divisors(c, rope_context) : nullptr;
  float magnitude = p.attn_factor;
  if (p.ext_factor != 0.0f) magnitude *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int32_t i = 0; i < half_rope; ++i) {
      float freq = 1.0f / std::pow(p.theta, float(2 * i) / float(rope_dim));
      if (divisors != nullptr) freq /= (*divisors)[size_t(i)];
      float angle = float(positions[t]) * freq * p.freq_scale;
      if (p.ext_factor != 0.0f) {
        const float extrapolated = float(positions[t]) * freq;
        const float y = (float(i) - p.corr_low) / std::max(0.001f, p.corr_high - p.corr_low);
        const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
        angle = extrapolated * p.freq_scale * (1.0f - ramp) + extrapolated * ramp;
      }
      cos_out[t * size_t(half_rope) + size_t(i)] = std::cos(angle) * magnitude;
      sin_out[t * size_t(half_rope) + size_t(i)] = std::sin(angle) * magnitude;
    }
  }
}

}  // namespace pagoda
