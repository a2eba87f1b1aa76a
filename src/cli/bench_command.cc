// `pagoda bench membw [--threads N] [--array-mib M] [--reps R] [--json]` and
// `pagoda bench latency [-m MODEL] [--prompt-len 512] [--gen 128] [--threads N] [--membw GBPS] [--json]`.
#include "cli/bench_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "bench/latency_bench.h"
#include "bench/memory_bandwidth.h"
#include "cli/bench_ablation_command.h"
#include "cli/bench_offline_command.h"
#include "cli/bench_scenario_commands.h"
#include "cli/bench_serve_command.h"
#include "cli/bench_structured_command.h"
#include "cli/common_options.h"
#include "cli/model_loading.h"
#include "core/thread_pool.h"
#include "loader/loaded_model.h"
#include "kernels/kernels.h"

namespace pagoda::cli {
namespace {

struct MembwOptions {
  CommonOptions common;
  int64_t array_mib = 256;
  int32_t num_reps = 5;
  bool json = false;
};

int bench_membw(const MembwOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (o.array_mib < 1 || o.array_mib > 8192) return report_error("--array-mib must be in [1, 8192]");
  if (o.num_reps < 1 || o.num_reps > 1000) return report_error("--reps must be in [1, 1000]");
  ThreadPool pool(config->threads);
  const bench::MemoryBandwidth bw = bench::measure_memory_bandwidth(pool, o.array_mib, o.num_reps);
  if (o.json) {
    std::printf("{\"bench\":\"membw\",\"threads\":%d,\"array_mib\":%lld,\"read_gbps\":%.2f,\"triad_gbps\":%.2f}\n",
                bw.num_threads, static_cast<long long>(o.array_mib), bw.read_gbps, bw.triad_gbps);
  } else {
    std::printf(
        "memory bandwidth, %d threads, 3 arrays of %lld MiB, best of %d:\n  read-only  %6.2f GB/s\n"
        "  triad      %6.2f GB/s\n",
        bw.num_threads, static_cast<long long>(o.array_mib), o.num_reps, bw.read_gbps, bw.triad_gbps);
  }
  return 0;
}

struct LatencyCliOptions {
  CommonOptions common;
  bench::LatencyOptions latency;
  std::optional<double> membw_gbps;
  bool json = false;
};

int bench_latency(const LatencyCliOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (o.latency.prompt_len < 1 || o.latency.num_generated < 2)
    return report_error("--prompt-len must be at least 1 and --gen at least 2");
  if (o.membw_gbps && !(*o.membw_gbps > 0.0)) return report_error("--membw must be a positive GB/s figure");
  Result<ModelOptions> model_options = resolve_model_options(o.common);
  if (!model_options.ok()) return report_error(model_options.error());
  Result<LoadedModel> loaded = load_configured_model(*config, kernels::best_kernels(), *model_options);
  if (!loaded.ok()) return report_error(loaded.error());
  const int32_t context = loaded->model->config().context_length;
  const int64_t total = int64_t(o.latency.prompt_len) + o.latency.num_generated;
  if (total > context)
    return report_error(fmt::format("--prompt-len + --gen = {} exceeds the model's context of {}", total, context));
  report_unused_by_single_sequence(*config, "bench latency");
  bench::LatencyOptions options = o.latency;
  options.membw_gbps = o.membw_gbps;
  const Result<KvDType> kv_dtype = resolve_kv_dtype(*config);
  if (!kv_dtype.ok()) return report_error(kv_dtype.error());
  options.kv_dtype = *kv_dtype;
  options.block_size = config->kv_cache.page_size;
  const Result<bench::LatencyReport> report = bench::run_latency_bench(*loaded, config->threads, options);
  if (!report.ok()) return report_error(report.error());
  const bench::LatencyReport& r = *report;
  if (o.json) {
    std::printf(
        "{\"bench\":\"latency\",\"model\":\"%s\",\"threads\":%d,\"prompt_len\":%d,\"gen\":%d,"
        "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f,\"ttft_ms\":%.3f,\"tpot_ms_mean\":%.4f,"
        "\"tpot_ms_p50\":%.4f,\"tpot_ms_p99\":%.4f,\"mbu\":%.4f,\"membw_gbps\":%.2f,"
        "\"weight_bytes_per_token\":%.0f,\"kv_bytes_per_token\":%.0f}\n",
        loaded->source.c_str(), r.num_threads, r.prompt_len, r.num_generated, r.prefill_tok_s, r.decode_tok_s,
        r.ttft_ms, r.tpot_ms_mean, r.tpot_ms_p50, r.tpot_ms_p99, r.mbu, r.membw_gbps, r.weight_bytes_per_token,
        r.kv_bytes_per_token);
  } else {
    std::printf(
        "model %s, %d threads\n  prefill pp%d   %9.2f tokens/s\n  decode  tg%d   %9.2f tokens/s\n"
        "  TTFT          %9.3f ms\n  TPOT mean     %9.4f ms (p50 %.4f, p99 %.4f)\n"
        "  bytes/token   %9.2f MB weights + %.2f MB KV\n  bandwidth     %9.2f GB/s (read-only)\n"
        "  MBU           %9.1f %%\n",
        loaded->source.c_str(), r.num_threads, r.prompt_len, r.prefill_tok_s, r.num_generated, r.decode_tok_s,
        r.ttft_ms, r.tpot_ms_mean, r.tpot_ms_p50, r.tpot_ms_p99, r.weight_bytes_per_token / 1e6,
        r.kv_bytes_per_token / 1e6, r.membw_gbps, r.mbu * 100.0);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (figures, not tests)");
  bench->require_subcommand(1);

  auto membw = std::make_shared<MembwOptions>();
  CLI::App* cmd = bench->add_subcommand("membw", "Memory bandwidth: read-only stream and STREAM triad");
  add_common_options(*cmd, membw->common, /*with_model=*/false);
  cmd->add_option("--threads", membw->common.threads, "threads (default: all cores)");
  cmd->add_option("--array-mib", membw->array_mib, "MiB per array (3 arrays)")->capture_default_str();
  cmd->add_option("--reps", membw->num_reps, "repetitions; the best counts")->capture_default_str();
  cmd->add_flag("--json", membw->json, "one JSON object instead of text");
  cmd->callback([membw, &exit_code] { exit_code = bench_membw(*membw); });

  auto latency = std::make_shared<LatencyCliOptions>();
  CLI::App* lat = bench->add_subcommand("latency", "One stream: prefill and decode tokens/s, TTFT, TPOT, MBU");
  add_common_options(*lat, latency->common);
  lat->add_option("--prompt-len", latency->latency.prompt_len, "prompt tokens (pp)")->capture_default_str();
  lat->add_option("--gen", latency->latency.num_generated, "generated tokens (tg)")->capture_default_str();
  lat->add_option("--membw", latency->membw_gbps, "memory bandwidth in GB/s (default: measured)");
  lat->add_option("--seed", latency->latency.seed, "seed of the random prompt")->capture_default_str();
  lat->add_flag("--json", latency->json, "one JSON object instead of text");
  lat->callback([latency, &exit_code] { exit_code = bench_latency(*latency); });

  add_bench_offline_command(*bench, exit_code);
  add_bench_scenario_commands(*bench, exit_code);
  add_bench_serve_command(*bench, exit_code);
  add_bench_ablation_command(*bench, exit_code);
  add_bench_structured_command(*bench, exit_code);
}

}  // namespace pagoda::cli
