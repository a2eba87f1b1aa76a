// write_random_hf_model: a random-weight Hugging Face model folder (config.json, model.safetensors, and a copy of
// a tokenizer.json when given) with a ModelShape's HF architecture, or that folder converted to GGUF. Same
// weight distribution as write_random_model (std 0.02, norms 1, biases random); deterministic for a seed. An
// embedding shape adds sentence-transformers' pooling files and its Matryoshka sizes, and names its tensors as
// Qwen3-Embedding does (no "model." prefix). A decoder reranker shape (ModelShape::decoder_reranker) is written as
// GGUF only, with the keys and head llama.cpp's converter adds for Qwen3-Reranker.
#pragma once

#include <pagoda/status.h>

#include <functional>
#include <string>

#include "core/types.h"
#include "synth/model_shapes.h"

namespace pagoda::synth {

struct RandomHfModelOptions {
  ModelShape shape;                 // hf_architecture must be set
  DType weight_type = DType::kF32;  // of the matrices: F32 or F16; norms and biases are F32
  uint64_t seed = 1;
  std::string output_path;       // a folder (hf) or a .gguf file (gguf)
  bool gguf = false;             // write the folder next to output_path, convert it, then remove it
  std::string tokenizer_json{};  // copied into the folder when non-empty
  std::function<void(int32_t, int32_t, const std::string&)> on_tensor{};
};

Status write_random_hf_model(const RandomHfModelOptions& options);

}  // namespace pagoda::synth
