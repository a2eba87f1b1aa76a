// HfConfig: a Hugging Face `config.json` of a supported decoder (model/architecture.h lists the families) read into
// ModelConfig plus what decides the tensor layout. A plain value; parse_hf_config validates every field it reads and
// names the file and field in errors.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace pagoda {

struct HfConfig {
  std::string hf_architecture;  // "Qwen3ForCausalLM"
  // A multimodal checkpoint's architectures[0] ("Qwen3_5ForConditionalGeneration") when the folder is one: its text
  // model is hf_architecture's, read from text_config (over the top level's fields, as llama.cpp's converter reads
  // them) and from the tensors under "model.language_model."; its vision tower is not loaded. Empty otherwise.
  std::string multimodal_architecture;
  // config.architecture is the GGUF one: "llama" (Llama, Mistral, Mixtral), "qwen2", "qwen3", "qwen3moe", "gemma2",
  // "gemma3", "phi3", "granite", "smollm3", "olmo2", "mistral3" or "exaone4".
  ModelConfig config;
  // Llama-style checkpoints rotate halves of each head; llama.cpp's llama GGUFs hold Q/K rows permuted so that
  // RoPE rotates adjacent pairs. True for Llama, Mistral, Mixtral, Granite, SmolLM3 and Ministral 3; false for the
  // NeoX-RoPE families.
  bool permute_qk = false;
  bool qkv_bias = false;  // Qwen2 (and attention_bias: true)
  bool qk_norm = false;   // Qwen3, Gemma 3
  bool tie_word_embeddings = false;
  bool norms_plus_one = false;  // Gemma: every RMSNorm scales by (1 + w); GGUF stores w + 1
  int32_t max_position_embeddings = 0;
  int32_t bos_token_id = -1;  // -1: none given
  int32_t eos_token_id = -1;
  // The llama3 rope_scaling fields as given (factor 0 = none), for writing the config back out.
  double rope_scaling_factor = 0, low_freq_factor = 0, high_freq_factor = 0;
  int32_t original_max_position_embeddings = 0;
};

// `path` is for messages ("DIR/config.json: num_attention_heads must be a positive integer").
Result<HfConfig> parse_hf_config(const std::string& json_text, const std::string& path);
Result<HfConfig> read_hf_config(const std::string& dir);  // DIR/config.json

// The llama3 rope scaling factors of HF's _compute_llama3_parameters (and llama.cpp's rope_freqs.weight): pair i
// of a head's `rope_dim` dims has its frequency divided by factor i.
std::vector<float> llama3_rope_freq_factors(double theta, int32_t rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, int32_t original_max_position_embeddings);

// config.json text for `c` (gen-model writes it; parse_hf_config reads it back to the same value).
std::string hf_config_json(const HfConfig& c);

}  // namespace pagoda
