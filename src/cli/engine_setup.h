// prepare_engine: what every engine-driving subcommand does before it creates an Engine: the config from file
// and flags, the model, the engine config with its KV pool (printed to stderr as the start-up lines).
// The caller creates the Engine (or several, one after another, for a comparison) from the result. Under
// --tp/--pp this process joins the MPI world first; only rank 0 returns to create engines.
#pragma once

#include <pagoda/status.h>

#include "cli/common_options.h"
#include "cli/engine_options.h"
#include "cli/parallel_setup.h"
#include "core/config.h"
#include "loader/loaded_model.h"

namespace pagoda::cli {

struct PreparedEngine {
  ParallelRun parallel;  // first, so it outlives the model that may use its ranks
  PagodaConfig config;
  LoadedModel loaded;
  SpecResources spec;  // --spec draft's model, --spec-ngram-corpus's table (resolved.config.spec points at them)
  ResolvedEngine resolved;
  // Under --tp/--pp, a rank other than 0: it has followed rank 0's steps to their end, and the command's work on
  // this rank is done (return 0).
  bool followed = false;
};

Result<PreparedEngine> prepare_engine(const CommonOptions& common, const EngineCliOptions& engine);

}  // namespace pagoda::cli
