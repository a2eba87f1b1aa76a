// RoPE's cos/sin tables: each pair's rotation at each position of a step, with the family's per-pair frequency
// divisors (llama3's rope_freqs, or LongRoPE's long or short set) and magnitude (LongRoPE's attention factor).
// Pure arithmetic on the config; it owns no buffer and knows nothing of the batch or the KV cache.
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

// Pair i of a token at position p rotates by p * freq_scale * theta^(-2i / rope_dim) / divisor_i; its row of
// `cos_out` and `sin_out` (f32 [positions.size(), rope_dim / 2]) gets the cosine and sine of that angle times
// rope_attn_factor.
void fill_rope_tables(const ModelConfig& config, std::span<const Pos> positions, float theta, float freq_scale,
                      int32_t rope_context, float* cos_out, float* sin_out);

}  // namespace pagoda
