// The architecture table.
#include "model/registry.h"

#include <fmt/format.h>

#include "model/llama_model.h"

namespace pagoda {

Result<std::unique_ptr<Model>> create_model(const format::GgufFile& file, const kernels::KernelTable& kernels,
                                            const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto arch, file.get_string("general.architecture"));
  if (!arch) return make_error(fmt::format("{}: missing metadata key general.architecture", file.name()));
  if (*arch != "llama")
    return make_error(fmt::format("{}: unknown architecture '{}' (supported: llama)", file.name(), *arch));
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, model_config_from_gguf(file));
  PAGODA_ASSIGN_OR_RETURN(ModelWeights weights, model_weights_from_gguf(file, config));
  return std::unique_ptr<Model>(std::make_unique<LlamaModel>(std::move(config), std::move(weights), kernels, options));
}

}  // namespace pagoda
