// Options every model-using subcommand shares (--config, -m, --max-seq-len, --threads) and the one way
// they combine: the config file first, then the flags that were given on the command line.
#pragma once

#include <pagoda/status.h>
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "core/config.h"
#include "kv/kv_cache_view.h"
#include "model/model_config.h"
#include "model/model_options.h"

namespace pagoda::cli {

struct CommonOptions {
  std::string config_path;
  std::optional<std::string> model;
  std::string hf_repo;  // -hf ORG/NAME[:QUANT]: the model from the Hugging Face Hub (or its cache)
  std::string hf_file;  // --hf-file: an exact file of that repository
  std::optional<int32_t> max_seq_len;
  std::optional<int32_t> threads;
  bool no_fusion = false;
  bool no_repack = false;
  std::string attention = "flash";
  std::optional<std::string> kv_cache_dtype;       // overrides kv_cache.dtype
  std::optional<std::string> cache_type_k;         // overrides kv_cache.type_k (-ctk, llama.cpp's spelling)
  std::optional<std::string> cache_type_v;         // overrides kv_cache.type_v (-ctv)
  std::optional<std::string> quantization;   // overrides quantization (weights quantized at load)
  std::optional<int32_t> tensor_parallel;    // --tp, overrides parallel.tensor_parallel
  std::optional<int32_t> pipeline_parallel;  // --pp, overrides parallel.pipeline_parallel
  // The subcommand can run split over MPI ranks (run, serve, the engine benchmarks); for the others a config
  // file's parallel settings are noted and left unused.
  bool splits_over_ranks = false;
  // The subcommand acts on the config's slo (serve, the engine benchmarks, embed, tune); the others note it unused.
  bool uses_slo = false;
  // RoPE overrides (add_rope_scaling_options): llama.cpp's flags of the same names.
  std::optional<std::string> rope_scaling;
  std::optional<float> rope_scale, rope_freq_base, rope_freq_scale;
  std::optional<float> yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
  std::optional<int32_t> yarn_orig_ctx;
};

// Adds --config always; -m/--model, -hf/--hf-repo, --hf-file, --quantization, --max-seq-len, --threads, --no-fusion, --attention and --kv-cache-dtype when
// `with_model`; --tp and --pp when `splits_over_ranks`.
void add_common_options(CLI::App& app, CommonOptions& options, bool with_model = true, bool splits_over_ranks = false);
// -hf/--hf-repo and --hf-file (for a subcommand that adds its own -m).
void add_hf_options(CLI::App& app, CommonOptions& options);
// --rope-scaling, --rope-scale, --rope-freq-base, --rope-freq-scale, --yarn-orig-ctx, --yarn-ext-factor,
// --yarn-attn-factor, --yarn-beta-fast, --yarn-beta-slow: for the subcommands that run a model they build (run, serve,
// perplexity, the engine benchmarks, embed).
void add_rope_scaling_options(CLI::App& app, CommonOptions& options);
// How the model runs: --no-fusion, --attention flash|naive, and the RoPE overrides.
Result<ModelOptions> resolve_model_options(const CommonOptions& options);
// The effective configuration: file (if any) overridden by flags, then validated. With -hf, the model is fetched
// (or found in the cache) here and `model` names the local file.
Result<PagodaConfig> resolve_config(const CommonOptions& options);
// K and V types of kv_cache.type_k / type_v, each falling back to kv_cache.dtype.
Result<KvCacheTypes> resolve_kv_types(const PagodaConfig& config);
// The whole file as text; errors: unreadable or empty.
Result<std::string> read_text_file(const std::string& path);
// Prints "pagoda: error: MESSAGE" to stderr and returns the exit code for a failed command (1).
int report_error(const std::string& message);
// Prints, as notes on stderr, the settings a one-sequence subcommand (run, bench latency) does not use.
void report_unused_by_single_sequence(const PagodaConfig& config, std::string_view subcommand);

}  // namespace pagoda::cli
