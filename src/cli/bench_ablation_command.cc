// `pagoda bench ablation [-m MODEL] [--scenario online|offline] [--num-prompts N] [--request-rate R]
// [--input-len I] [--shared-prefix P] [--output-len O] [--kv-budget-tokens T] [--json] [--report DIR]`: argument
// parsing and printing only; the rows are bench/ablation_plan, the run bench/ablation_bench.
#include "cli/bench_ablation_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "bench/ablation_bench.h"
#include "bench/ablation_models.h"
#include "bench/ablation_report.h"
#include "cli/common_options.h"
#include "core/block_size.h"
#include "engine/engine_plan.h"

namespace pagoda::cli {
namespace {

struct AblationCliOptions {
  CommonOptions common;
  std::string scenario = "online";
  bench::AblationWorkload workload;
  bench::AblationEngineBase base;
  int32_t num_repeats = 1;
  bool json = false;
  std::string report_dir;
};

int bench_ablation(AblationCliOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (config->quantization != "none")
    return report_error("quantization = " + config->quantization +
                        ": bench ablation measures the f32, Q8_0 and Q4_0 weights itself; leave quantization out here");
  if (o.scenario == "online") {
    o.workload.scenario = bench::AblationScenario::kOnline;
  } else if (o.scenario == "offline") {
    o.workload.scenario = bench::AblationScenario::kOffline;
  } else {
    return report_error("invalid option: --scenario must be online or offline, got '" + o.scenario + "'");
  }
  if (Status s = bench::validate_ablation_workload(o.workload); !s.ok()) return report_error(s.message());
  if (o.base.kv_budget_f32_tokens < 1) return report_error("--kv-budget-tokens must be at least 1");
  if (o.num_repeats < 1 || o.num_repeats > 100) return report_error("--repeats must be in [1, 100]");
  if (o.base.max_num_seqs < 1) return report_error("--batch-size must be at least 1");
  if (o.base.max_batched_tokens < 1) return report_error("--max-batched-tokens must be at least 1");
  if (!is_valid_block_size(o.base.block_size)) return report_error(block_size_error("--block-size", o.base.block_size));

  const std::string scratch =
      (std::filesystem::temp_directory_path() / fmt::format("pagoda-ablation-{}", ::getpid())).string();
  std::fprintf(stderr, "pagoda: bench ablation: writing the Q8_0 and Q4_0 copies of the model into %s\n",
               scratch.c_str());
  Result<bench::AblationModelFiles> files = bench::AblationModelFiles::prepare(config->model, scratch);
  if (!files.ok()) return report_error(files.error());
  const ModelConfig& mc = files->model_config();
  o.base.max_seq_len = config->max_seq_len > 0 ? config->max_seq_len : std::min(512, mc.context_length);
  o.base.num_threads = resolve_num_threads(config->threads, mc);

  bench::AblationRunInfo info;
  info.model = config->model.empty() ? "bundled:stories260K" : config->model;
  info.scenario = o.scenario;
  info.workload = o.workload;
  info.base = o.base;
  info.kv_budget_bytes = bench::kv_budget_bytes(o.base, mc);
  info.num_repeats = o.num_repeats;
  std::fprintf(stderr, "pagoda: %s", bench::ablation_header_text(info).c_str());

  const std::vector<bench::AblationRow> plan = bench::ablation_plan();
  size_t done = 0;
  Result<std::vector<bench::AblationRowResult>> rows =
      bench::run_ablation(plan, *files, o.base, o.workload, o.num_repeats, [&](const bench::AblationRowResult& r) {
        ++done;
        std::fprintf(stderr, "pagoda: [%zu/%zu] %-11s %.1f s, %.2f output tok/s, %d KV blocks, peak %d running\n", done,
                     plan.size(), r.row.name.c_str(), r.measured.duration_s, r.measured.figures.output_tok_s,
                     r.num_kv_blocks, r.measured.peak_running);
      });
  if (!rows.ok()) return report_error(rows.error());
  if (o.json) {
    std::printf("%s\n", bench::ablation_json(info, *rows).c_str());
  } else {
    std::printf("%s%s", bench::ablation_header_text(info).c_str(), bench::ablation_table_text(*rows).c_str());
  }
  if (!o.report_dir.empty()) {
    if (Status s = bench::ablation_html_report(info, *rows).write(o.report_dir); !s.ok())
      return report_error(s.message());
    std::fprintf(stderr, "pagoda: report written to %s/index.html\n", o.report_dir.c_str());
  }
  return 0;
}

}  // namespace

void add_bench_ablation_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<AblationCliOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "ablation", "Baseline, then each optimization switched on in turn (cumulative): TTFT, TPOT, tok/s, KV capacity");
  add_common_options(*cmd, o->common, /*with_model=*/false);
  cmd->add_option("-m,--model", o->common.model, "GGUF with f32 (or f16) weights (default: the bundled stories260K)");
  add_hf_options(*cmd, o->common);
  cmd->add_option("--max-seq-len", o->common.max_seq_len,
                  "positions per sequence, what contiguous KV reserves (default: min(512, the model's))");
  cmd->add_option("--threads", o->common.threads, "worker threads (default: all cores)");
  cmd->add_option("--scenario", o->scenario, "online (streaming at --request-rate) or offline (all at once)")
      ->capture_default_str();
  cmd->add_option("--num-prompts", o->workload.num_requests, "requests per row")->capture_default_str();
  cmd->add_option("--request-rate", o->workload.request_rate, "online: Poisson arrivals per second")
      ->capture_default_str();
  cmd->add_option("--input-len", o->workload.prompt_len, "prompt tokens (BOS and shared prefix included)")
      ->capture_default_str();
  cmd->add_option("--shared-prefix", o->workload.shared_prefix_len, "leading prompt tokens every request shares")
      ->capture_default_str();
  cmd->add_option("--output-len", o->workload.output_len, "output tokens per request")->capture_default_str();
  cmd->add_option("--kv-budget-tokens", o->base.kv_budget_f32_tokens,
                  "KV budget of every row: the bytes of this many tokens of f32 KV")
      ->capture_default_str();
  cmd->add_option("--batch-size", o->base.max_num_seqs, "sequences per step at most")->capture_default_str();
  cmd->add_option("--max-batched-tokens", o->base.max_batched_tokens, "tokens per step (with chunked prefill)")
      ->capture_default_str();
  cmd->add_option("--block-size", o->base.block_size, "tokens per KV block")->capture_default_str();
  cmd->add_option("--seed", o->workload.seed, "seed of prompts and arrivals")->capture_default_str();
  cmd->add_option("--repeats", o->num_repeats,
                  "runs per row, each on a fresh engine; the one with the most output tokens/s counts (a shared "
                  "machine's noise only ever slows a run down)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object (with every request's TTFT and TPOT) instead of the table");
  cmd->add_option("--report", o->report_dir, "also write DIR/index.html: the table and plots");
  cmd->callback([o, &exit_code] { exit_code = bench_ablation(*o); });
}

}  // namespace pagoda::cli
