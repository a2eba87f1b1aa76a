// ModelShape: the hyper-parameters of real Llama-family models, by name, for random-weight benchmark models
// (`pagoda gen-model --shape NAME`). Plain values; no weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::bench {

struct ModelShape {
  std::string name;
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  // The HF family of the shape ("LlamaForCausalLM", "Qwen3ForCausalLM", ...): gen-model writes it as an HF
  // folder (and converts that for --format gguf). Empty: the plain llama GGUF writer.
  std::string hf_architecture{};
  int32_t head_dim = 0;  // 0: dim / num_heads
  bool tied_embeddings = false;
  float llama3_rope_factor = 0.0f;  // llama3 rope scaling (low 1, high 4, original context 8192); 0 = none
  int32_t bos_token_id = 1;
  int32_t eos_token_id = 2;

  int32_t head_size() const { return head_dim > 0 ? head_dim : dim / num_heads; }
  int64_t num_params() const;  // weights of all matrices and norms
};

std::optional<ModelShape> find_model_shape(std::string_view name);
std::vector<std::string> model_shape_names();

}  // namespace pagoda::bench
