// `pagoda bench structured [--tokenizer tokenizer.json|MODEL.gguf] [--passes 3] [--json]`: the time of a token mask
// under JSON-schema, json_object, GBNF and regex grammars on a tokenizer's vocabulary (the bundled model's
// by default), cold and warm (structured_bench.h). `--tpot [-m MODEL]`: TPOT of a batch with and without each
// grammar through the engine (structured_tpot.h). `--maskbench DIR [--vocab GGUF] [--time-limit 30] [--slowest 10]
// [--json]`: MaskBench's schemas and instances, mask by mask (maskbench.h).
#include "cli/bench_structured_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "assets/bundled_model.h"
#include "bench/maskbench.h"
#include "bench/structured_bench.h"
#include "bench/structured_tpot.h"
#include "cli/common_options.h"
#include "engine/engine_plan.h"
#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::cli {
namespace {

struct StructuredCliOptions {
  std::string tokenizer_path;
  int32_t num_warm_passes = 3;
  bool json = false;
  bool tpot = false;
  std::string maskbench_dir;
  double time_limit_s = 30;
  int32_t num_slowest = 10;
  std::string model_path;  // --tpot: the model ("" = bundled)
  int32_t threads = 0;
  bench::StructuredTpotOptions tpot_options;
};

int bench_structured_tpot(const StructuredCliOptions& o) {
  if (!o.tokenizer_path.empty()) return report_error("--tpot runs the model's own tokenizer; leave --tokenizer out");
  if (o.tpot_options.num_requests < 1 || o.tpot_options.num_requests > 256)
    return report_error("--requests must be in [1, 256]");
  if (o.tpot_options.max_tokens < 2 || o.tpot_options.max_tokens > 4096)
    return report_error("--max-tokens must be in [2, 4096]");
  if (o.tpot_options.num_rounds < 1 || o.tpot_options.num_rounds > 100)
    return report_error("--rounds must be in [1, 100]");
  Result<LoadedModel> loaded = load_model(o.model_path, kernels::best_kernels());
  if (!loaded.ok()) return report_error(loaded.error());
  const ModelConfig& mc = loaded->model->config();
  EngineSettings s;
  s.num_threads = o.threads;
  s.max_num_seqs = o.tpot_options.num_requests;
  s.max_seq_len = std::min(mc.context_length, 64 + o.tpot_options.max_tokens);
  s.kv_blocks = o.tpot_options.num_requests * ((s.max_seq_len + 15) / 16);
  s.prefix_cache = false;
  Result<EnginePlan> plan = plan_engine(s, mc, 0);
  if (!plan.ok()) return report_error(plan.error());
  std::fprintf(stderr, "pagoda: bench structured: %s, %s kernels, %d requests of up to %d tokens, %d rounds\n",
               loaded->source.c_str(), std::string(kernels::isa_name(kernels::best_kernels().isa)).c_str(),
               o.tpot_options.num_requests, o.tpot_options.max_tokens, o.tpot_options.num_rounds);
  Result<std::vector<bench::StructuredTpotRow>> rows = bench::run_structured_tpot(
      *loaded->model, *loaded->tokenizer, plan->config, bench::default_structured_cases(), o.tpot_options);
  if (!rows.ok()) return report_error(rows.error());
  std::printf("%s", bench::structured_tpot_text(*rows).c_str());
  return 0;
}

Result<std::unique_ptr<Tokenizer>> load_bench_tokenizer(const std::string& path) {
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(const format::GgufFile file,
                            format::GgufFile::from_memory(bundled_model_gguf(), std::string(kBundledModelName)));
    return tokenizer_from_gguf(file);
  }
  if (path.ends_with(".json")) return tokenizer_from_hf_json(path);
  PAGODA_ASSIGN_OR_RETURN(const format::GgufFile file, format::GgufFile::open(path));
  return tokenizer_from_gguf(file);
}

int bench_structured_maskbench(const StructuredCliOptions& o) {
  if (!(o.time_limit_s > 0 && o.time_limit_s <= 3600)) return report_error("--time-limit must be in (0, 3600] seconds");
  if (o.num_slowest < 0 || o.num_slowest > 100000) return report_error("--slowest must be in [0, 100000]");
  Result<std::unique_ptr<Tokenizer>> tokenizer = load_bench_tokenizer(o.tokenizer_path);
  if (!tokenizer.ok()) return report_error(tokenizer.error());
  std::fprintf(stderr, "pagoda: bench structured: MaskBench files in %s, vocabulary %s, %.0f s per schema\n",
               o.maskbench_dir.c_str(), o.tokenizer_path.empty() ? "of the bundled model" : o.tokenizer_path.c_str(),
               o.time_limit_s);
  bench::MaskbenchOptions options;
  options.time_limit_s = o.time_limit_s;
  options.num_slowest = o.num_slowest;
  Result<bench::MaskbenchReport> report = bench::run_maskbench(**tokenizer, o.maskbench_dir, options);
  if (!report.ok()) return report_error(report.error());
  std::printf("%s%s", o.json ? bench::maskbench_report_json(*report).c_str() : bench::maskbench_report_text(*report).c_str(),
              o.json ? "\n" : "");
  return 0;
}

int bench_structured(const StructuredCliOptions& o) {
  if (o.tpot) return bench_structured_tpot(o);
  if (!o.maskbench_dir.empty()) return bench_structured_maskbench(o);
  if (o.num_warm_passes < 1 || o.num_warm_passes > 1000) return report_error("--passes must be in [1, 1000]");
  Result<std::unique_ptr<Tokenizer>> tokenizer = load_bench_tokenizer(o.tokenizer_path);
  if (!tokenizer.ok()) return report_error(tokenizer.error());
  Result<bench::StructuredBenchReport> report =
      bench::run_structured_bench(**tokenizer, bench::default_structured_cases(), o.num_warm_passes);
  if (!report.ok()) return report_error(report.error());
  if (o.json) {
    std::printf("%s\n", bench::structured_report_json(*report).c_str());
  } else {
    std::printf("tokenizer: %s\n%s", o.tokenizer_path.empty() ? "the bundled model's" : o.tokenizer_path.c_str(),
                bench::structured_report_text(*report).c_str());
  }
  return 0;
}

}  // namespace

void add_bench_structured_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<StructuredCliOptions>();
  CLI::App* cmd =
      bench.add_subcommand("structured", "Structured outputs: token mask time per step (JSON schema, GBNF, regex)");
  cmd->add_option("--tokenizer,--vocab", o->tokenizer_path,
                  "a tokenizer.json or a GGUF, e.g. llama.cpp's ggml-vocab-llama-bpe.gguf (default: the bundled model's)");
  // The mask benchmark's options and --tpot's exclude each other: an option of the other mode is an error.
  CLI::Option* tpot =
      cmd->add_flag("--tpot", o->tpot, "TPOT of a batch with and without each grammar, through the engine on -m");
  CLI::Option* maskbench =
      cmd->add_option("--maskbench", o->maskbench_dir,
                      "a folder of MaskBench files (jsonschemabench's maskbench/data): pass/fail counts and mask times")
          ->excludes(tpot);
  cmd->add_option("--time-limit", o->time_limit_s, "--maskbench: seconds per schema (compile and instances)")
      ->capture_default_str()
      ->needs(maskbench);
  cmd->add_option("--slowest", o->num_slowest,
                  "--maskbench: list the N slowest schemas by time to first mask and by their slowest mask")
      ->capture_default_str()
      ->needs(maskbench);
  cmd->add_option("--passes", o->num_warm_passes, "warm passes over the documents after the cold one")
      ->capture_default_str()
      ->excludes(tpot)
      ->excludes(maskbench);
  cmd->add_flag("--json", o->json, "one JSON object instead of the table")->excludes(tpot);
  cmd->add_option("-m,--model", o->model_path, "--tpot: the model (default: the bundled stories260K)")->needs(tpot);
  cmd->add_option("--threads", o->threads, "--tpot: threads (default: all cores, 1 for a tiny model)")->needs(tpot);
  cmd->add_option("--requests", o->tpot_options.num_requests, "--tpot: requests in the batch")
      ->capture_default_str()
      ->needs(tpot);
  cmd->add_option("--max-tokens", o->tpot_options.max_tokens, "--tpot: output tokens per request at most")
      ->capture_default_str()
      ->needs(tpot);
  cmd->add_option("--rounds", o->tpot_options.num_rounds, "--tpot: alternating rounds; each side keeps its best")
      ->capture_default_str()
      ->needs(tpot);
  cmd->callback([o, &exit_code] { exit_code = bench_structured(*o); });
}

}  // namespace pagoda::cli
