// The config's model, quantized at load when it says so.
#include "cli/model_loading.h"

#include <cstdio>
#include <string>

#include "eval/awq_calibration.h"
#include "loader/quantize_on_load.h"
#include "model/rope_scaling.h"

namespace pagoda::cli {

Result<LoadedModel> load_configured_model(const PagodaConfig& config, const kernels::KernelTable& kernels,
                                          const ModelOptions& options) {
  Result<std::optional<format::GgmlType>> type = weight_quantization_type(config.quantization);
  if (!type.ok()) return make_error("invalid option: " + type.error());
  Result<LoadedModel> loaded =
      *type ? load_model_quantized(config.model, eval::builtin_load_quantization(**type, config.threads), kernels,
                                   options)
            : load_model(config.model, kernels, options);
  // What was quantized or converted at load, when anything was.
  if (loaded.ok() && !loaded->weights_note.empty())
    std::fprintf(stderr, "pagoda: weights: %s\n", loaded->weights_note.c_str());
  // RoPE settings given over the file's: what the model now runs with.
  if (loaded.ok() && !options.rope_overrides.empty()) {
    const std::string rope = describe_rope_scaling(loaded->model->config());
    std::fprintf(stderr, "pagoda: rope overrides: %s\n", rope.empty() ? "no scaling" : rope.c_str());
  }
  return loaded;
}

}  // namespace pagoda::cli
