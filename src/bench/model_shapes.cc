// The shape table. Figures are the published configs of each model.
#include "bench/model_shapes.h"

namespace pagoda::bench {
namespace {

const ModelShape kShapes[] = {
    // A few-hundred-KB model for tests of the benchmark tools themselves.
    {"tiny", 64, 172, 2, 8, 4, 512, 512, 10000.0f, 1e-5f, ""},
    // Karpathy's stories15M (llama2.c).
    {"stories15m", 288, 768, 6, 6, 6, 32000, 256, 10000.0f, 1e-5f, ""},
    // TinyLlama-1.1B (v1.0 chat).
    {"tinyllama-1.1b", 2048, 5632, 22, 32, 4, 32000, 2048, 10000.0f, 1e-5f, ""},
    // Llama-2-7B.
    {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, 1e-5f, ""},
    // Llama-3.2-1B: tied embeddings, llama3 rope scaling of 32.
    {"llama3.2-1b", 2048, 8192, 16, 32, 8, 128256, 131072, 500000.0f, 1e-5f, "LlamaForCausalLM", 64, true, 32.0f,
     128000, 128001},
    // Qwen3-0.6B: head_dim 128 though hidden / heads is 64, per-head Q/K norm, tied.
    {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 151936, 40960, 1000000.0f, 1e-6f, "Qwen3ForCausalLM", 128, true, 0.0f, 151643,
     151645},
    // Qwen2.5-0.5B: QKV bias, tied.
    {"qwen2.5-0.5b", 896, 4864, 24, 14, 2, 151936, 32768, 1000000.0f, 1e-6f, "Qwen2ForCausalLM", 64, true, 0.0f, 151643,
     151643},
};

}  // namespace

int64_t ModelShape::num_params() const {
  const int64_t kv_dim = int64_t(head_size()) * num_kv_heads, q_dim = int64_t(head_size()) * num_heads;
  const int64_t per_layer =
      2 * int64_t(dim) * q_dim + 2 * int64_t(dim) * kv_dim + 3 * int64_t(dim) * hidden_dim + 2 * int64_t(dim);
  return int64_t(vocab_size) * dim * (tied_embeddings ? 1 : 2) + per_layer * num_layers + dim;
}

std::optional<ModelShape> find_model_shape(std::string_view name) {
  for (const ModelShape& s : kShapes)
    if (s.name == name) return s;
  return std::nullopt;
}

std::vector<std::string> model_shape_names() {
  std::vector<std::string> names;
  for (const ModelShape& s : kShapes) names.push_back(s.name);
  return names;
}

}  // namespace pagoda::bench
