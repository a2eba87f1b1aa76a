// HfCheckpoint: a Hugging Face model folder (config.json + safetensors) opened as a TensorSet in llama.cpp's
// GGUF names and dim order, so the loader and the GGUF converter see exactly what a converted file holds. The
// family's HfFamily (model/architecture.h) names the tensors (each found with or without the "model." prefix, which
// embedding checkpoints such as Qwen3-Embedding's leave out, or under "model.language_model." in a multimodal
// checkpoint, whose vision tower it leaves unread). Owns the safetensors mappings and the few tensors it
// must rewrite: Llama-style Q/K rows permuted as llama.cpp's convert_hf_to_gguf.py does (RoPE on adjacent pairs),
// Gemma's norms as w + 1, rope_freqs.weight for llama3 rope scaling and Phi-3's LongRoPE factors, gpt-oss's MXFP4
// experts repacked into ggml's blocks with gate and up split out of their interleaving, Qwen3.5's DeltaNet value
// heads in llama.cpp's tiled order (its A_log as -exp, its conv taps squeezed); every other tensor is borrowed from the mapping (a stacked expert tensor points at each expert's). Never touches tokenizer files.
#pragma once

#include <pagoda/status.h>

#include <memory>
#include <string>
#include <vector>

#include "format/safetensors_reader.h"
#include "model/hf_config.h"
#include "model/tensor_set.h"

namespace pagoda {

class HfCheckpoint {
 public:
  // Errors name the file and the tensor or field: "DIR/model.safetensors: model.layers.0.self_attn.k_proj.weight
  // has shape [64, 64] but config.json gives [32, 64] (num_key_value_heads * head_dim, hidden_size)".
  static Result<std::unique_ptr<HfCheckpoint>> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const HfConfig& hf_config() const { return hf_; }
  const ModelConfig& config() const { return hf_.config; }
  const TensorSet& tensors() const { return tensors_; }
  // GGUF tensor names in llama.cpp's order (token_embd, blk.0.*, ..., output_norm, output).
  const std::vector<std::string>& tensor_order() const { return order_; }
  // What of the folder is not loaded, for a start-up line (a multimodal checkpoint's vision tower); "" when all is.
  const std::string& note() const { return note_; }

 private:
  HfCheckpoint() = default;
  Status map_tensors();
  std::string dir_;
  HfConfig hf_;
  std::unique_ptr<format::SafetensorsCheckpoint> safetensors_;
  std::vector<std::vector<uint8_t>> owned_;  // rewritten tensors' bytes; TensorRef::data points here
  TensorSet tensors_;
  std::vector<std::string> order_;
  std::string note_;
};

// True when `path` is a directory holding config.json (an HF model folder rather than a GGUF file).
bool is_hf_model_folder(const std::string& path);

}  // namespace pagoda
