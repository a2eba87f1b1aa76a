// prepare_engine: what every engine-driving subcommand does before it creates an Engine: the config from file
// and flags, the model, the engine config with its KV pool (printed to stderr as the start-up lines).
// The caller creates the Engine (or several, one after another, for a comparison) from the result.
#pragma once

#include <pagoda/status.h>

#include "cli/common_options.h"
#include "cli/engine_options.h"
#include "core/config.h"
#include "engine/loaded_model.h"

namespace pagoda::cli {

struct PreparedEngine {
  PagodaConfig config;
  LoadedModel loaded;
  ResolvedEngine resolved;
};

Result<PreparedEngine> prepare_engine(const CommonOptions& common, const EngineCliOptions& engine);

}  // namespace pagoda::cli
