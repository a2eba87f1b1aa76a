// RoPE's cos/sin tables: each pair's rotation at each position of a step, with the family's per-pair frequency
// divisors (llama3's rope_freqs, or LongRoPE's long or short set), YaRN's blend of interpolated and extrapolated
// angles, and the magnitude (LongRoPE's attention factor, YaRN's mscale). Pure arithmetic on the config; it owns no
// buffer and knows nothing of the batch or the KV cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "model/model_config.h"

namespace pagoda {

// The per-pair divisors (rope_dim / 2 of them) for sequences of a context configured as `rope_context` positions:
// llama3's rope_freqs, or with LongRoPE the long set when rope_context exceeds rope_original_context and the short
// one otherwise (llama.cpp's choice by its context size, n_ctx_seq > n_ctx_orig_yarn); nullptr: none.
const std::vector<float>* rope_divisors(const ModelConfig& config, int32_t rope_context);

// What one kind of layer rotates by: llama.cpp's ggml_rope_ext arguments as its context derives them from the model.
struct RopeParams {
  float theta = 10000.0f;     // frequency base
  float freq_scale = 1.0f;    // interpolated angle = extrapolated angle * freq_scale
  float ext_factor = 0.0f;    // YaRN's ramp weight; 0: plain (linear) scaling
  float attn_factor = 1.0f;   // magnitude of cos and sin (times YaRN's 1 + 0.1 ln(1 / freq_scale) when the ramp is on)
  float corr_low = 0.0f;      // YaRN's ramp runs over pairs corr_low..corr_high: extrapolated below, interpolated above
  float corr_high = 0.0f;
  int32_t rope_dim = 0;        // the rotated dims of a head; 0: ModelConfig::rope_dim
  bool frequency_divisors = true;  // false: the layer kind takes no rope_freq_factors (Gemma 4's windowed layers)
};

// HF's get_mscale (llama.cpp's): 1 for scale <= 1, else 0.1 * mscale * ln(scale) + 1.
float yarn_get_mscale(float scale, float mscale);
// llama.cpp's ggml_rope_yarn_corr_dims: the pairs whose wavelength spans beta_fast and beta_slow rotations over the
// original context, floored and ceiled, clamped to 0..rope_dim - 1. dims[0] = low, dims[1] = high.
void yarn_corr_dims(int32_t rope_dim, int32_t original_context, float theta, float beta_fast, float beta_slow,
                    float dims[2]);
// The full-attention layers' rotation (swa_layer false) or the windowed layers' (their own base and scale where the
// family sets them): the ramp on (weight 1) under YaRN unless yarn_ext_factor says otherwise, and then the magnitude
// get_mscale(factor) (divided by get_mscale(factor, yarn_log_multiplier) when given) over YaRN's own
// 1 + 0.1 ln(factor), times rope_attn_factor; without the ramp, yarn_attn_factor times rope_attn_factor. Windowed
// layers of a rope_swa_plain config: no ramp, magnitude 1. Multi-head latent attention with a log multiplier (llama.cpp's
// deepseek2 reading of it): magnitude rope_attn_factor, the rest moved into mla_score_scale.
RopeParams rope_params(const ModelConfig& config, bool swa_layer);
// The score scale of multi-head latent attention (llama.cpp's deepseek2 kq_scale): mscale^2 / sqrt(mla_key_dim) with
// mscale = a (1 + 0.1 ln(1 / s)) (1 + (yarn_log_multiplier / 0.1) 0.1 ln(1 / s)), a the rotation's attn_factor and s
// its freq_scale (rope_params); 1 / sqrt(mla_key_dim) unscaled.
float mla_score_scale(const ModelConfig& config);

// Pair i of a token at position p: extrapolated angle p * theta^(-2i / rope_dim) / divisor_i, interpolated angle that
// times freq_scale; with ext_factor 0 the interpolated one, else the two mixed by ramp_i * ext_factor (ramp 1 below
// corr_low, 0 above corr_high, linear between) and the magnitude times 1 + 0.1 ln(1 / freq_scale). Its row of
// `cos_out` and `sin_out` (f32 [positions.size(), rope_dim / 2]) gets the cosine and sine times the magnitude.
void fill_rope_tables(const ModelConfig& config, std::span<const Pos> positions, const RopeParams& params,
                      int32_t rope_context, float* cos_out, float* sin_out);

}  // namespace pagoda
