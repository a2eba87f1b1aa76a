// `pagoda bench membw [--threads N] [--array-mib M] [--reps R] [--json]`.
#include "cli/bench_command.h"

#include <cstdio>
#include <memory>

#include "bench/memory_bandwidth.h"
#include "cli/common_options.h"
#include "core/thread_pool.h"

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
    std::printf("memory bandwidth, %d threads, 3 arrays of %lld MiB, best of %d:\n  read-only  %6.2f GB/s\n"
                "  triad      %6.2f GB/s\n",
                bw.num_threads, static_cast<long long>(o.array_mib), o.num_reps, bw.read_gbps, bw.triad_gbps);
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
}

}  // namespace pagoda::cli
