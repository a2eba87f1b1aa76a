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

  int64_t num_params() const;  // weights of all matrices and norms
};

std::optional<ModelShape> find_model_shape(std::string_view name);
std::vector<std::string> model_shape_names();

}  // namespace pagoda::bench
