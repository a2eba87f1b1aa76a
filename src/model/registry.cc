// The architecture table.
#include "model/registry.h"

#include <fmt/format.h>

#include "model/llama_model.h"
#include "model/weight_repack.h"

namespace pagoda {

bool architecture_is_supported(const std::string& arch) {
  // Qwen2 and Qwen3 are Llama with QKV bias / Q/K norm (found by tensor) and NeoX RoPE (ModelConfig).
  return arch == "llama" || arch == "qwen2" || arch == "qwen3";
}

Result<std::unique_ptr<Model>> create_model(const format::GgufFile& file, const kernels::KernelTable& kernels,
                                            const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto arch, file.get_string("general.architecture"));
  if (!arch) return make_error(fmt::format("{}: missing metadata key general.architecture", file.name()));
  if (!architecture_is_supported(*arch))
    return make_error(
        fmt::format("{}: unknown architecture '{}' (supported: llama, qwen2, qwen3)", file.name(), *arch));
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, model_config_from_gguf(file));
  return create_model(std::move(config), tensor_set_from_gguf(file), kernels, options);
}

Result<std::unique_ptr<Model>> create_model(ModelConfig config, const TensorSet& tensors,
                                            const kernels::KernelTable& kernels, const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(ModelWeights weights, model_weights_from_tensors(tensors, config));
  if (options.repack_weights) repack_weights(kernels, weights, tensors.file_mapped);
  return std::unique_ptr<Model>(std::make_unique<LlamaModel>(std::move(config), std::move(weights), kernels, options));
}

}  // namespace pagoda
