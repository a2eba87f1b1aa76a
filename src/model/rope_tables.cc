// RoPE's cos/sin tables (rope_tables.h).
#include "model/rope_tables.h"

#include <cmath>

namespace pagoda {

const std::vector<float>* rope_divisors(const ModelConfig& c, int32_t rope_context) {
  if (!c.rope_long_factors.empty())
    return rope_context > c.rope_original_context ? &c.rope_long_factors : &c.rope_short_factors;
  return c.rope_freq_factors.empty() ? nullptr : &c.rope_freq_factors;
}

void fill_rope_tables(const ModelConfig& c, std::span<const Pos> positions, float theta, float freq_scale,
                      int32_t rope_context, float* cos_out, float* sin_out) {
  const int32_t half_rope = c.rope_dim / 2;
  const std::vector<float>* divisors = rope_divisors(c, rope_context);
  const float magnitude = c.rope_attn_factor;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int32_t i = 0; i < half_rope; ++i) {
      float freq = 1.0f / std::pow(theta, float(2 * i) / float(c.rope_dim));
      if (divisors != nullptr) freq /= (*divisors)[size_t(i)];
      const float angle = float(positions[t]) * freq * freq_scale;
      cos_out[t * size_t(half_rope) + size_t(i)] = std::cos(angle) * magnitude;
      sin_out[t * size_t(half_rope) + size_t(i)] = std::sin(angle) * magnitude;
    }
  }
}

}  // namespace pagoda
