// load_configured_model: the model a command's config names, loaded as load_model does, or quantized at load when
// the config's `quantization` asks (awq-int4 calibrated on the built-in text); prints the start-up line saying so.
// Glue between the loader and eval (AWQ's calibration pass); no loading logic of its own.
#pragma once

#include <pagoda/status.h>

#include "core/config.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"

namespace pagoda::cli {

Result<LoadedModel> load_configured_model(const PagodaConfig& config, const kernels::KernelTable& kernels,
                                          const ModelOptions& options);

}  // namespace pagoda::cli
