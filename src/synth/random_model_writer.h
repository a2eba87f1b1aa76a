// write_random_model: a GGUF with a real model's shapes and random weights of realistic scale (uniform with
// std 0.02, norms 1), plus a synthetic SentencePiece vocabulary, in llama.cpp's conventions so llama.cpp can
// benchmark the same file. Deterministic for a seed. Tensors are generated one at a time while writing.
#pragma once

#include <pagoda/status.h>

#include <functional>
#include <span>
#include <string>

#include "format/gguf_types.h"
#include "synth/model_shapes.h"

namespace pagoda::synth {

struct RandomModelOptions {
  ModelShape shape;
  format::GgmlType weight_type = format::GgmlType::kF32;  // of the 2-D tensors; norms are always f32
  uint64_t seed = 1;
  std::string output_path;
  // Called after each tensor is generated: (tensors done, tensors in all, name).
  std::function<void(int32_t, int32_t, const std::string&)> on_tensor{};
};

// dst = uniform random values of std 0.02 in `type` (f32, f16, q8_0, q4_0), deterministic for `seed`.
void fill_random_weights(std::span<uint8_t> dst, format::GgmlType type, uint64_t seed);
// dst = uniform random bytes, deterministic for `seed` (gpt-oss's MXFP4 nibbles in an HF folder).
void fill_random_bytes(std::span<uint8_t> dst, uint64_t seed);
// Types gen-model can write for the matrices.
bool random_model_supports(format::GgmlType type);
// Llama-family shapes only (hf_architecture empty); the other families: write_random_hf_model.
Status write_random_model(const RandomModelOptions& options);

}  // namespace pagoda::synth
