// Activations rearranged for the row-interleaved VNNI kernels (avx_vnni/, avx512/): the tokens of a group side by
// side per 32-value block, so a kernel reaches every token's bytes, scale and integer starting value from one
// pointer at constant offsets (with one pointer per token, eight tokens' addresses alone exhaust the registers).
// Plain C++, built without -m flags: the kernels of every level call the same packing.
#pragma once

#include <cstdint>

#include "quant/block_q8_0.h"
#include "quant/block_q8_K.h"

namespace pagoda::kernels {

// Q8_0 activations of num_tokens tokens in groups of `group` (the last one may be short): token group g's block b
// is `group` x 32 int8 (token after token), then `group` f32 scales d, then `group` int32 start values
// start_scale x sum of the block's 32 values (the nibble offset's correction, or the unsigned-weight one);
// packed_q8_block_bytes(group) bytes, at (g * num_blocks + b) of them. Slots past the last token are unset.
inline constexpr int64_t packed_q8_block_bytes(int64_t group) { return group * (32 + 4 + 4); }
// xq: Q8_0 [num_tokens, num_blocks] -> this thread's packed scratch (valid until its next packing).
const uint8_t* pack_q8_activations(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_blocks, int64_t group,
                                   int32_t start_scale);

// q8_K activations for the K-quant kernels (kernels/kquant_x8_impl.h): token group g's super-block b is, for each
// 32-value block j < 8, `group` x 32 int8 (token after token), then `group` f32 d, then for each 16-value sum k < 16
// `group` int32 bsums[k]; packed_q8_K_unit_bytes(group) bytes, at (g * num_super + b) of them. Slots past the last
// token are unset.
inline constexpr int64_t packed_q8_K_unit_bytes(int64_t group) { return group * (256 + 4 + 64); }
const uint8_t* pack_q8_K_activations(const quant::BlockQ8_K* xq, int64_t num_tokens, int64_t num_super,
                                     int64_t group);

// Q8_0 activations for the 4-bit codebook kernels (kernels/codebook_x8_impl.h), which need only the quants and the
// scale: token group g's block b is `group` x 32 int8 (token after token), then `group` f32 d;
// packed_q8_codebook_block_bytes(group) bytes, at (g * num_blocks + b) of them. Slots past the last token are unset.
inline constexpr int64_t packed_q8_codebook_block_bytes(int64_t group) { return group * (32 + 4); }
const uint8_t* pack_q8_codebook_activations(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_blocks,
                                            int64_t group);

// Per-token INT8 activations of num_tokens tokens in groups of `group`: token group g's word w (4 values) is
// `group` x 4 int8 (token after token), at (g * (num_in / 4) + w) * 4 * group bytes; then, after all groups, each
// token's start value start_scale x sum of its num_in values as int32 [num_tokens]. num_in a multiple of 4.
struct PackedInt8Activations {
  const uint8_t* words;
  const int32_t* starts;
};
PackedInt8Activations pack_int8_activations(const int8_t* xq, int64_t num_tokens, int64_t num_in, int64_t group,
                                            int32_t start_scale);

}  // namespace pagoda::kernels
