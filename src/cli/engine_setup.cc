// The shared start-up of engine-driving subcommands.
#include "cli/engine_setup.h"

#include <cstdio>

#include "cli/model_loading.h"
#include "kernels/kernels.h"

namespace pagoda::cli {

Result<PreparedEngine> prepare_engine(const CommonOptions& common, const EngineCliOptions& engine) {
  PreparedEngine p;
  CommonOptions common_here = common;
  common_here.uses_slo = engine.decodes;  // the engine's prefill budget takes its targets
  PAGODA_ASSIGN_OR_RETURN(p.config, resolve_config(common_here));
  PAGODA_ASSIGN_OR_RETURN(ModelOptions model_options, resolve_model_options(common));
  PAGODA_ASSIGN_OR_RETURN(p.parallel, ParallelRun::join(p.config));
  p.parallel.set_model_options(model_options);
  PAGODA_ASSIGN_OR_RETURN(p.loaded, load_configured_model(p.config, kernels::best_kernels(), model_options));
  PAGODA_ASSIGN_OR_RETURN(p.spec, load_spec_resources(engine.spec, *p.loaded.tokenizer));
  PAGODA_ASSIGN_OR_RETURN(p.resolved, resolve_engine_config(p.config, engine, p.loaded.model->config(),
                                                            p.parallel.ranks_on_this_machine(), p.spec));
  p.resolved.config.num_threads = p.parallel.threads_per_rank(p.resolved.config.num_threads);
  if (p.parallel.follow_or_lead(p.loaded, p.resolved.config.num_threads)) {
    p.followed = true;
    return p;
  }
  print_engine_summary(p.resolved, stderr);
  std::fprintf(stderr, "pagoda: %s\n", kernels::isa_summary(kernels::best_kernels()).c_str());
  return p;
}

}  // namespace pagoda::cli
