// Options of the subcommands that run the continuous-batching Engine (serve, bench offline, ...): the
// scheduling and KV-pool flags, parsed and combined with the config file into EngineSettings.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/spec_options.h"
#include "core/config.h"
#include "engine/engine_config.h"
#include "engine/engine_plan.h"
#include "model/model_config.h"

namespace pagoda::cli {

struct EngineCliOptions {
  std::optional<int32_t> batch_size;  // overrides the config's batch_size
  std::optional<int32_t> max_batched_tokens;
  std::optional<int32_t> max_queue;
  std::optional<int32_t> kv_blocks;  // overrides kv_cache.max_entries
  std::optional<double> kv_memory_gib;
  std::optional<int32_t> block_size;  // overrides kv_cache.block_size
  bool no_prefix_cache = false;
  std::optional<int32_t> state_snapshots;  // EngineSettings::state_snapshots
  bool no_chunked_prefill = false;
  std::string max_prefill_with_decodes = "auto";  // SchedulerConfig::max_prefill_tokens_with_decodes
  std::optional<double> tpot_slo_ms;              // SchedulerConfig::tpot_slo_ms
  std::optional<double> ttft_slo_ms;              // SchedulerConfig::ttft_slo_ms
  SpecCliOptions spec;
  // False for an engine that only runs pooling requests (embed): it never decodes, so it takes neither the
  // decode-pacing flags (--max-prefill-with-decodes, --tpot-slo, --ttft-slo; the config's slo is noted unused)
  // nor speculative decoding's.
  bool decodes = true;
};

// `decodes` false: the flags of an engine that never decodes (EngineCliOptions::decodes).
void add_engine_options(CLI::App& app, EngineCliOptions& options, bool decodes = true);

using ResolvedEngine = EnginePlan;
// The flags over the config file, checked under their flag names, then engine/engine_plan.h's plan_engine (the one
// sizing policy, shared with the public API). The automatic KV budget is this process's part of the free RAM:
// `ranks_sharing_ram` processes of one split run on this machine share it. `spec_resources`: what the --spec flags
// loaded (load_spec_resources).
Result<ResolvedEngine> resolve_engine_config(const PagodaConfig& config, const EngineCliOptions& options,
                                             const ModelConfig& model, int32_t ranks_sharing_ram,
                                             const SpecResources& spec_resources);
// The start-up lines: scheduling and the KV pool.
void print_engine_summary(const ResolvedEngine& engine, std::FILE* out);

}  // namespace pagoda::cli
