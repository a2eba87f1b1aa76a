// Shared option wiring and config resolution for the subcommands.
#include "cli/common_options.h"

#include "cli/hub_model.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace pagoda::cli {

void add_hf_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--hf-repo", o.hf_repo,
                 "-hf ORG/NAME[:QUANT]: a model from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE) "
                 "kept in its cache (HF_HOME); QUANT default Q4_K_M, else the closest type present; a repository "
                 "without GGUFs is loaded as a safetensors folder");
  app.add_option("--hf-file", o.hf_file, "-hff: an exact GGUF file of the -hf repository (with its other splits)");
}

void add_common_options(CLI::App& app, CommonOptions& o, bool with_model, bool splits_over_ranks) {
  app.add_option("--config", o.config_path, "JSON configuration file (flags override it)");
  if (!with_model) return;
  app.add_option("-m,--model", o.model, "GGUF model file (default: the bundled stories260K)");
  add_hf_options(app, o);
  app.add_option("--quantization", o.quantization,
                 "quantize a float model's weights at load: none, q8_0, q4_0, int8 or awq-int4 (overrides "
                 "quantization)");
  app.add_option("--max-seq-len", o.max_seq_len, "positions per sequence (default: the model's context length)");
  app.add_option("--threads", o.threads, "worker threads (default: all cores, 1 for a model under 4M parameters)");
  app.add_flag("--no-fusion", o.no_fusion, "run every op of the forward pass on its own (for the ablation)");
  app.add_flag(
      "--no-repack", o.no_repack,
      "keep Q4_0/Q8_0/INT8 weights in the file's layout instead of 8-row interleaved copies (for the ablation)");
  app.add_option("--attention", o.attention, "attention kernel: flash (online softmax over KV blocks) or naive");
  app.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV cache type of K and V: f16 (default), f32, bf16, q8_0, q4_0 or int8 (overrides kv_cache.dtype)");
  app.add_option("--cache-type-k", o.cache_type_k,
                 "(also -ctk) KV cache type of K alone, as llama.cpp: f32, f16, bf16, q8_0, q4_0 or int8 (overrides "
                 "kv_cache.type_k)");
  app.add_option("--cache-type-v", o.cache_type_v,
                 "(also -ctv) KV cache type of V alone, as llama.cpp: f32, f16, bf16, q8_0, q4_0 or int8 (overrides "
                 "kv_cache.type_v)");
  o.splits_over_ranks = splits_over_ranks;
  if (!splits_over_ranks) return;
  app.add_option("--tp", o.tensor_parallel,
                 "tensor parallel ranks (overrides parallel.tensor_parallel): launch with mpirun -np TP*PP");
  app.add_option("--pp", o.pipeline_parallel, "pipeline parallel stages (overrides parallel.pipeline_parallel)");
}

void add_rope_scaling_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--rope-scaling", o.rope_scaling, "RoPE scaling over the model file's: none, linear or yarn");
  app.add_option("--rope-scale", o.rope_scale, "RoPE context scale factor (frequency scale = 1 / N)");
  app.add_option("--rope-freq-base", o.rope_freq_base, "RoPE frequency base (theta) over the model file's");
  app.add_option("--rope-freq-scale", o.rope_freq_scale, "RoPE frequency scale (wins over --rope-scale)");
  app.add_option("--yarn-orig-ctx", o.yarn_orig_ctx, "YaRN: the model's original (training) context");
  app.add_option("--yarn-ext-factor", o.yarn_ext_factor, "YaRN: extrapolation mix weight (0 off, default 1 with yarn)");
  app.add_option("--yarn-attn-factor", o.yarn_attn_factor,
                 "YaRN: magnitude of cos/sin while the ramp is off (--yarn-ext-factor 0)");
  app.add_option("--yarn-beta-fast", o.yarn_beta_fast, "YaRN: low correction dim, in rotations (default 32)");
  app.add_option("--yarn-beta-slow", o.yarn_beta_slow, "YaRN: high correction dim, in rotations (default 1)");
}

Result<ModelOptions> resolve_model_options(const CommonOptions& o) {
  ModelOptions options;
  options.fusion = !o.no_fusion;
  options.repack_weights = !o.no_repack;
  std::optional<AttentionKind> attention = parse_attention_kind(o.attention);
  if (!attention) return make_error("invalid option: --attention must be flash or naive, got '" + o.attention + "'");
  options.attention = *attention;
  RopeScalingOverrides& r = options.rope_overrides;
  if (o.rope_scaling) {
    r.type = parse_rope_scaling_type(*o.rope_scaling);
    if (!r.type || *r.type == RopeScalingType::kLongRope)
      return make_error("invalid option: --rope-scaling must be none, linear or yarn, got '" + *o.rope_scaling + "'");
  }
  r.rope_scale = o.rope_scale;
  r.rope_freq_base = o.rope_freq_base;
  r.rope_freq_scale = o.rope_freq_scale;
  r.yarn_ext_factor = o.yarn_ext_factor;
  r.yarn_attn_factor = o.yarn_attn_factor;
  r.yarn_beta_fast = o.yarn_beta_fast;
  r.yarn_beta_slow = o.yarn_beta_slow;
  r.yarn_original_context = o.yarn_orig_ctx;
  return options;
}

Result<PagodaConfig> resolve_config(const CommonOptions& o) {
  PagodaConfig config;
  if (!o.config_path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(config, load_config_file(o.config_path));
  }
  if (o.model) config.model = *o.model;
  if (!o.hf_file.empty() && o.hf_repo.empty()) return make_error("invalid option: --hf-file needs -hf ORG/NAME");
  if (!o.hf_repo.empty()) {
    if (o.model) return make_error("invalid option: -m and -hf both name the model; give one");
    PAGODA_ASSIGN_OR_RETURN(hub::FetchedModel fetched, fetch_hf_model(o.hf_repo, o.hf_file));
    config.model = fetched.path;
  }
  if (o.max_seq_len) config.max_seq_len = *o.max_seq_len;
  if (o.threads) config.threads = *o.threads;
  if (o.kv_cache_dtype) config.kv_cache.dtype = *o.kv_cache_dtype;
  if (o.cache_type_k) config.kv_cache.type_k = *o.cache_type_k;
  if (o.cache_type_v) config.kv_cache.type_v = *o.cache_type_v;
  if (o.quantization) config.quantization = *o.quantization;
  if (o.tensor_parallel) config.parallel.tensor_parallel = *o.tensor_parallel;
  if (o.pipeline_parallel) config.parallel.pipeline_parallel = *o.pipeline_parallel;
  Status valid = validate_config(config);
  if (!valid.ok()) return make_error("invalid option: " + valid.message());
  if (!o.splits_over_ranks && (config.parallel.tensor_parallel > 1 || config.parallel.pipeline_parallel > 1)) {
    std::fprintf(stderr,
                 "pagoda: note: parallel.tensor_parallel = %d, parallel.pipeline_parallel = %d: this subcommand runs "
                 "in one process (run, serve and bench offline/batched/interference/prefix split over ranks)\n",
                 config.parallel.tensor_parallel, config.parallel.pipeline_parallel);
    config.parallel = ParallelConfig{};
  }
  if (!o.uses_slo && (config.slo.ttft_ms > 0.0 || config.slo.tpot_ms > 0.0)) {
    std::fprintf(stderr,
                 "pagoda: note: slo.ttft_ms = %g, slo.tpot_ms = %g: this subcommand does not schedule concurrent "
                 "streams (serve, the engine benchmarks and tune use it); not used\n",
                 config.slo.ttft_ms, config.slo.tpot_ms);
    config.slo = SloConfig{};
  }
  return config;
}

Result<KvCacheTypes> resolve_kv_types(const PagodaConfig& config) {
  auto side = [&](const char* key, const std::string& name) -> Result<KvDType> {
    const std::optional<KvDType> dtype = parse_kv_dtype(name);
    if (!dtype)
      return make_error(fmt::format("invalid option: {} must be one of {}, got '{}'", key, kv_dtype_names(), name));
    return *dtype;
  };
  KvCacheTypes types;
  const bool own_k = !config.kv_cache.type_k.empty(), own_v = !config.kv_cache.type_v.empty();
  PAGODA_ASSIGN_OR_RETURN(types.k,
                          side(own_k ? "kv_cache.type_k (--cache-type-k)" : "kv_cache.dtype (--kv-cache-dtype)",
                               own_k ? config.kv_cache.type_k : config.kv_cache.dtype));
  PAGODA_ASSIGN_OR_RETURN(types.v,
                          side(own_v ? "kv_cache.type_v (--cache-type-v)" : "kv_cache.dtype (--kv-cache-dtype)",
                               own_v ? config.kv_cache.type_v : config.kv_cache.dtype));
  return types;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(fmt::format("cannot read {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return make_error(fmt::format("{} is empty", path));
  return text.str();
}

int report_error(const std::string& message) {
  std::fprintf(stderr, "pagoda: error: %s\n", message.c_str());
  return 1;
}

void report_unused_by_single_sequence(const PagodaConfig& config, std::string_view subcommand) {
  for (const std::string& line : unused_by_single_sequence(config, subcommand))
    std::fprintf(stderr, "pagoda: note: %s\n", line.c_str());
}

}  // namespace pagoda::cli
