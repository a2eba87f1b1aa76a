// Options of the subcommands that run the continuous-batching Engine (serve, bench offline, ...): the
// scheduling and KV-pool flags, and the one way they combine with the config file into an EngineConfig.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/spec_options.h"
#include "core/config.h"
#include "engine/engine_config.h"
#include "engine/kv_pool_plan.h"
#include "model/model_config.h"

namespace pagoda::cli {

struct EngineCliOptions {
  std::optional<int32_t> batch_size;  // overrides the config's batch_size
  std::optional<int32_t> max_batched_tokens;
  std::optional<int32_t> max_queue;
  std::optional<int32_t> kv_blocks;  // overrides kv_cache.max_entries
  std::optional<double> kv_memory_gib;
  std::optional<int32_t> block_size;  // overrides kv_cache.page_size
  bool no_prefix_cache = false;
  bool no_chunked_prefill = false;
  std::string max_prefill_with_decodes = "auto";  // SchedulerConfig::max_prefill_tokens_with_decodes
  SpecCliOptions spec;
};

// Tokens per step unless told otherwise: on 2 cores a step of 128 tokens of a 1B model takes a few seconds
// of prefill at most, which bounds how long running streams wait for a chunk.
inline constexpr int32_t kDefaultMaxBatchedTokens = 128;

void add_engine_options(CLI::App& app, EngineCliOptions& options);

struct ResolvedEngine {
  EngineConfig config;
  KvPoolPlan kv_pool;
};
// Context length from the config (0 = the model's), KV pool from the config and flags, batch_size "auto" =
// as many sequences as there are blocks and step tokens. The automatic KV budget is this process's part of the
// free RAM: `ranks_sharing_ram` processes of one split run on this machine share it.
Result<ResolvedEngine> resolve_engine_config(const PagodaConfig& config, const EngineCliOptions& options,
                                             const ModelConfig& model, int32_t ranks_sharing_ram = 1);
// The start-up lines: scheduling and the KV pool.
void print_engine_summary(const ResolvedEngine& engine, std::FILE* out);

}  // namespace pagoda::cli
