// The config's model, quantized at load when it says so.
#include "cli/model_loading.h"

#include <cstdio>
#include <string>

#include "eval/awq_calibration.h"
#include "loader/quantize_on_load.h"

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
  return loaded;
}

}  // namespace pagoda::cli
