// `pagoda tune [-m MODEL] [--scenario online|offline] [--ttft-slo MS] [--tpot-slo MS] [-o CONFIG.json]`: argument
// parsing and printing only. The measurements are bench/memory_bandwidth and bench/matmul_throughput, the
// estimates, choice and hints bench/tune_plan, the sweep bench/tune_sweep.
#include "cli/tune_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "bench/ablation_models.h"
#include "bench/tune_outputs.h"
#include "bench/tune_sweep.h"
#include "cli/common_options.h"
#include "engine/engine_plan.h"

namespace pagoda::cli {
namespace {

struct TuneCliOptions {
  CommonOptions common;
  std::string scenario = "online";
  std::optional<double> ttft_slo_ms;
  std::optional<double> tpot_slo_ms;
  std::string output_path;
  bench::TuneSweepOptions sweep;
  int64_t membw_array_mib = 64;
};

const char* kv_name(KvDType d) { return kv_dtype_name(d); }

// Three significant figures below 10 ms (a small model's steps), one decimal above.
std::string ms(double v) { return v < 10.0 ? fmt::format("{:.3g} ms", v) : fmt::format("{:.1f} ms", v); }

int tune(TuneCliOptions& o) {
  o.common.uses_slo = true;  // the sweep's SLOs, when --ttft-slo / --tpot-slo are not given
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (config->quantization != "none")
    return report_error("quantization = " + config->quantization +
                        ": tune measures the f32, Q8_0 and Q4_0 weights itself; leave quantization out here");
  bench::AblationWorkload& w = o.sweep.workload;
  if (o.scenario == "online") {
    w.scenario = bench::AblationScenario::kOnline;
  } else if (o.scenario == "offline") {
    w.scenario = bench::AblationScenario::kOffline;
  } else {
    return report_error("invalid option: --scenario must be online or offline, got '" + o.scenario + "'");
  }
  // The flags over the file's slo.
  if (!o.ttft_slo_ms && config->slo.ttft_ms > 0.0) o.ttft_slo_ms = config->slo.ttft_ms;
  if (!o.tpot_slo_ms && config->slo.tpot_ms > 0.0) o.tpot_slo_ms = config->slo.tpot_ms;
  if ((o.ttft_slo_ms && !(*o.ttft_slo_ms > 0)) || (o.tpot_slo_ms && !(*o.tpot_slo_ms > 0)))
    return report_error("--ttft-slo and --tpot-slo must be positive milliseconds");
  if (Status s = bench::validate_ablation_workload(w); !s.ok()) return report_error(s.message());
  if (o.sweep.kv_budget_f32_tokens < 1) return report_error("--kv-budget-tokens must be at least 1");
  o.sweep.slo = {o.ttft_slo_ms, o.tpot_slo_ms};
  if (!o.output_path.empty()) {  // fail before minutes of measuring, not after
    const std::filesystem::path parent = std::filesystem::absolute(o.output_path).parent_path();
    if (!std::filesystem::is_directory(parent))
      return report_error(fmt::format("cannot write {}: {} is not a folder", o.output_path, parent.string()));
  }

  const std::string scratch =
      (std::filesystem::temp_directory_path() / fmt::format("pagoda-tune-{}", ::getpid())).string();
  std::fprintf(stderr, "pagoda: tune: writing the Q8_0 and Q4_0 copies of the model into %s\n", scratch.c_str());
  Result<bench::AblationModelFiles> files = bench::AblationModelFiles::prepare(config->model, scratch);
  if (!files.ok()) return report_error(files.error());
  const ModelConfig& mc = files->model_config();
  o.sweep.max_seq_len = config->max_seq_len > 0 ? config->max_seq_len : mc.context_length;
  o.sweep.num_threads = resolve_num_threads(config->threads, mc);
  if (w.prompt_len + w.output_len > o.sweep.max_seq_len)
    return report_error(fmt::format("--input-len + --output-len exceeds max_seq_len {}", o.sweep.max_seq_len));

  // 1. This machine and 2. the model's shapes.
  Result<bench::MeasuredEstimates> measured =
      bench::measure_tune_estimates(*files, o.sweep.num_threads, o.membw_array_mib);
  if (!measured.ok()) return report_error(measured.error());
  const bench::TuneEstimates& e = measured->estimates;
  const int32_t num_threads = measured->num_threads;
  std::printf("machine: %.2f GB/s read bandwidth, %.1f GFLOP/s f32 matmul, %d threads\n", e.membw_gbps, e.matmul_gflops,
              num_threads);
  std::printf(
      "model %s: %d layers, %d KV heads x %d: KV %lld bytes/token at f16 (2 x layers x KV heads x head dim x 2), "
      "%lld f32, %lld int8; %.2f MiB at f16 per sequence of %d tokens\n",
      config->model.empty() ? "bundled:stories260K" : config->model.c_str(), mc.num_layers, mc.num_kv_heads,
      mc.head_dim, static_cast<long long>(e.kv_bytes_per_token_f16), static_cast<long long>(e.kv_bytes_per_token_f32),
      static_cast<long long>(e.kv_bytes_per_token_int8),
      double(e.kv_bytes_per_token_f16) * o.sweep.max_seq_len / (1 << 20), o.sweep.max_seq_len);
  for (bench::AblationWeights wt :
       {bench::AblationWeights::kF32, bench::AblationWeights::kQ8_0, bench::AblationWeights::kQ4_0})
    std::printf("  %-5s weights: %8.1f MB read per decode step -> at least %.2f ms per token (bandwidth bound)\n",
                std::string(bench::ablation_weights_name(wt)).c_str(), double(e.weight_bytes[size_t(wt)]) / 1e6,
                bench::decode_ms_per_token(e.weight_bytes[size_t(wt)], e.membw_gbps));
  std::fflush(stdout);

  // 3. The sweep.
  std::fprintf(stderr, "pagoda: tune: %s sweep, %d requests of %d + %d tokens per trial\n", o.scenario.c_str(),
               w.num_requests, w.prompt_len, w.output_len);
  Result<bench::TuneSweep> sweep = bench::run_tune_sweep(*files, o.sweep, [](const bench::TuneTrial& t) {
    std::fprintf(stderr, "pagoda: tune: %-18s %-58s TTFT p99 %s, TPOT p99 %s, %.2f tok/s\n", t.stage.c_str(),
                 bench::describe_candidate(t.candidate).c_str(), ms(t.figures.ttft_p99_ms).c_str(),
                 ms(t.figures.tpot_p99_ms).c_str(), t.figures.output_tok_s);
  });
  if (!sweep.ok()) return report_error(sweep.error());
  std::printf("\n%-18s %-5s %-4s %5s %7s %5s | %10s %10s %10s %10s %9s %5s %s\n", "stage", "wts", "kv", "block",
              "tokens", "batch", "TTFT mean", "TTFT p99", "TPOT mean", "TPOT p99", "out tok/s", "seqs", "");
  for (size_t i = 0; i < sweep->trials.size(); ++i) {
    const bench::TuneTrial& t = sweep->trials[i];
    const bench::AblationFigures& f = t.figures;
    std::printf(
        "%s",
        fmt::format("{:<18} {:<5} {:<4} {:>5} {:>7} {:>5} | {:>10} {:>10} {:>10} {:>10} {:>9.2f} {:>5} {}{}\n", t.stage,
                    bench::ablation_weights_name(t.candidate.weights), kv_name(t.candidate.kv_dtype),
                    t.candidate.block_size, t.candidate.max_batched_tokens, t.candidate.batch_size, ms(f.ttft_mean_ms),
                    ms(f.ttft_p99_ms), ms(f.tpot_mean_ms), ms(f.tpot_p99_ms), f.output_tok_s, f.max_concurrent_seqs,
                    bench::meets_slo(f, o.sweep.slo) ? "" : "misses SLO ", i == sweep->choice.index ? "<- chosen" : "")
            .c_str());
  }
  const bench::TuneTrial& best = sweep->trials[sweep->choice.index];
  std::printf("\nchosen: %s (%s: %s%s)\n", bench::describe_candidate(best.candidate).c_str(),
              w.scenario == bench::AblationScenario::kOnline ? "online, lowest TPOT p99" : "offline, most tokens/s",
              sweep->choice.met_slo ? "meets the SLOs" : "NO trial met the SLOs",
              o.ttft_slo_ms || o.tpot_slo_ms ? "" : " (none given)");
  std::printf("  max_batched_tokens is not a config key: pass --max-batched-tokens %d to serve and the benchmarks\n",
              best.candidate.max_batched_tokens);
  for (const std::string& hint : bench::tune_hints(sweep->trials, sweep->choice, w.scenario, o.sweep.slo, e))
    std::printf("hint: %s\n", hint.c_str());

  // 4. The config file.
  if (!o.output_path.empty()) {
    Result<std::string> model_path = bench::write_tuned_config(best.candidate, *files, config->model, o.output_path,
                                                               o.sweep.max_seq_len, sweep->kv_blocks, o.sweep.slo);
    if (!model_path.ok()) return report_error(model_path.error());
    std::printf("wrote %s (model %s)\n", o.output_path.c_str(), model_path->empty() ? "bundled" : model_path->c_str());
  }
  return 0;
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Measure this machine, sweep the engine's knobs and write the best config that meets the SLOs");
  add_common_options(*cmd, o->common, /*with_model=*/false);
  cmd->add_option("-m,--model", o->common.model, "GGUF with f32 (or f16) weights (default: the bundled stories260K)");
  add_hf_options(*cmd, o->common);
  cmd->add_option("--max-seq-len", o->common.max_seq_len, "positions per sequence (default: the model's)");
  cmd->add_option("--threads", o->common.threads, "worker threads (default: all cores)");
  cmd->add_option("--scenario", o->scenario, "online (lowest TPOT p99 at --request-rate) or offline (most tokens/s)")
      ->capture_default_str();
  cmd->add_option("--ttft-slo", o->ttft_slo_ms, "TTFT p99 must be at most this many ms (default: slo.ttft_ms)");
  cmd->add_option("--tpot-slo", o->tpot_slo_ms, "TPOT p99 must be at most this many ms (default: slo.tpot_ms)");
  cmd->add_option("-o,--output", o->output_path, "write the chosen configuration here (JSON, loads with --config)");
  cmd->add_option("--num-prompts", o->sweep.workload.num_requests, "requests per trial")->capture_default_str();
  cmd->add_option("--request-rate", o->sweep.workload.request_rate, "online: Poisson arrivals per second")
      ->capture_default_str();
  cmd->add_option("--input-len", o->sweep.workload.prompt_len, "prompt tokens")->capture_default_str();
  cmd->add_option("--shared-prefix", o->sweep.workload.shared_prefix_len, "leading prompt tokens shared")
      ->capture_default_str();
  cmd->add_option("--output-len", o->sweep.workload.output_len, "output tokens per request")->capture_default_str();
  cmd->add_option("--kv-budget-tokens", o->sweep.kv_budget_f32_tokens,
                  "KV pool of every trial: the bytes of this many f32 KV tokens")
      ->capture_default_str();
  cmd->add_option("--membw-mib", o->membw_array_mib, "MiB per array of the bandwidth measurement")
      ->capture_default_str();
  cmd->add_option("--seed", o->sweep.workload.seed, "seed of prompts and arrivals")->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = tune(*o); });
}

}  // namespace pagoda::cli
