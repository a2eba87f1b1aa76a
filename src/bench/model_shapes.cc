// The shape table. Figures are the published configs of each model.
#include "bench/model_shapes.h"

namespace pagoda::bench {
namespace {

const ModelShape kShapes[] = {
    // A few-hundred-KB model for tests of the benchmark tools themselves.
    {"tiny", 64, 172, 2, 8, 4, 512, 512, 10000.0f, 1e-5f},
    // Karpathy's stories15M (llama2.c).
    {"stories15m", 288, 768, 6, 6, 6, 32000, 256, 10000.0f, 1e-5f},
    // TinyLlama-1.1B (v1.0 chat).
    {"tinyllama-1.1b", 2048, 5632, 22, 32, 4, 32000, 2048, 10000.0f, 1e-5f},
    // Llama-2-7B.
    {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, 1e-5f},
};

}  // namespace

int64_t ModelShape::num_params() const {
  const int64_t kv_dim = int64_t(dim) / num_heads * num_kv_heads;
  const int64_t per_layer =
      2 * int64_t(dim) * dim + 2 * int64_t(dim) * kv_dim + 3 * int64_t(dim) * hidden_dim + 2 * int64_t(dim);
  return int64_t(vocab_size) * dim * 2 + per_layer * num_layers + dim;
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
