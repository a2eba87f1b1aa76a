// `pagoda bench gemv [--types q4_K,q6_K] [--threads 1,2] [--mib 1200] [--reps 3] [--membw GBPS] [--json]`: decode's
// one-token matrix-vector products per weight type streamed from DRAM over 7B-shaped matrices
// (bench/gemv_stream_bench.h), beside the same kernel from L2 and the read-only bandwidth, on the best kernel table (or
// PAGODA_ISA's).
#include "cli/bench_gemv_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/gemv_stream_bench.h"
#include "cli/common_options.h"
#include "kernels/kernels.h"

namespace pagoda::cli {
namespace {

struct GemvOptions {
  std::string types = "q4_K,q5_K,q6_K,iq4_xs,q8_0";
  std::string threads = "1,2";
  int64_t mib = 1200;
  int32_t reps = 3;
  std::optional<double> membw;
  bool json = false;
};

std::optional<DType> parse_type(const std::string& name) {
  for (size_t i = 0; i < kNumDTypes; ++i) {
    const DType d = DType(i);
    const std::string_view n = dtype_name(d);
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return d;
  }
  return std::nullopt;
}

int bench_gemv(const GemvOptions& o) {
  bench::GemvStreamOptions options;
  options.types.clear();
  options.thread_counts.clear();
  std::stringstream types(o.types);
  for (std::string name; std::getline(types, name, ',');) {
    const std::optional<DType> d = parse_type(name);
    if (!d || !bench::gemv_stream_supports(*d))
      return report_error(
          fmt::format("--types: '{}' is not one of q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, q4_0, q8_0", name));
    options.types.push_back(*d);
  }
  std::stringstream threads(o.threads);
  for (std::string n; std::getline(threads, n, ',');) {
    int32_t v = 0;
    try {
      size_t used = 0;
      v = std::stoi(n, &used);
      if (used != n.size()) v = 0;
    } catch (const std::exception&) {
      v = 0;
    }
    if (v < 1 || v > 1024) return report_error(fmt::format("--threads: '{}' is not a thread count in [1, 1024]", n));
    options.thread_counts.push_back(v);
  }
  if (options.types.empty() || options.thread_counts.empty()) return report_error("--types and --threads name none");
  if (o.mib < 1 || o.mib > (int64_t(1) << 20)) return report_error("--mib must be in [1, 1048576]");
  if (o.reps < 1 || o.reps > 100) return report_error("--reps must be in [1, 100]");
  options.min_stream_bytes = o.mib << 20;
  options.num_reps = o.reps;
  if (o.membw && !(*o.membw > 0.0 && *o.membw < 1e6)) return report_error("--membw must be in (0, 1e6) GB/s");
  options.read_gbps = o.membw;
  const kernels::KernelTable& k = kernels::best_kernels();
  const std::vector<bench::GemvStreamFigure> figures = bench::run_gemv_stream_bench(k, options);

  if (o.json) {
    nlohmann::json out = {{"bench", "gemv"}, {"isa", kernels::isa_name(k.isa)}, {"figures", nlohmann::json::array()}};
    for (const bench::GemvStreamFigure& f : figures)
      out["figures"].push_back({{"type", dtype_name(f.dtype)},
                                {"layout", dtype_name(f.layout)},
                                {"threads", f.num_threads},
                                {"stream_bytes", f.stream_bytes},
                                {"stream_gbps", f.stream_gbps},
                                {"cached_gbps", f.cached_gbps},
                                {"read_gbps", f.read_gbps},
                                {"clock_ghz", f.clock_ghz},
                                {"stream_weights_per_cycle", f.stream_weights_per_cycle},
                                {"cached_weights_per_cycle", f.cached_weights_per_cycle}});
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("gemv, one token, 7B-shaped matrices (%s); clock ~%.2f GHz (dependent adds)\n",
              kernels::isa_summary(k).c_str(), figures.empty() ? 0.0 : figures.front().clock_ghz);
  std::printf("%-8s %-10s %3s %9s %10s %10s %8s %11s %9s %9s\n", "type", "layout", "thr", "set MB", "DRAM GB/s",
              "read GB/s", "of read", "L2 GB/s", "w/cyc DR", "w/cyc L2");
  for (const bench::GemvStreamFigure& f : figures)
    std::printf("%-8s %-10s %3d %9.0f %10.2f %10.2f %7.1f%% %11.2f %9.2f %9.2f\n", dtype_name(f.dtype).data(),
                dtype_name(f.layout).data(), f.num_threads, double(f.stream_bytes) / 1e6, f.stream_gbps, f.read_gbps,
                100.0 * f.stream_gbps / f.read_gbps, f.cached_gbps, f.stream_weights_per_cycle,
                f.cached_weights_per_cycle);
  std::printf(
      "(w/cyc: weights per cycle and thread; a type whose L2 rate is not well above the read bandwidth is "
      "compute-bound)\n");
  return 0;
}

}  // namespace

void add_bench_gemv_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<GemvOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "gemv", "Decode's matrix-vector product per weight type, streamed from DRAM over 7B-shaped matrices");
  cmd->add_option("--types", o->types, "comma-separated weight types")->capture_default_str();
  cmd->add_option("--threads", o->threads, "comma-separated thread counts")->capture_default_str();
  cmd->add_option("--mib", o->mib, "MiB of weights per type, at least (whole 7B layers)")->capture_default_str();
  cmd->add_option("--reps", o->reps, "passes over the set; the best counts")->capture_default_str();
  cmd->add_option("--membw", o->membw, "read bandwidth in GB/s (default: measured per thread count)");
  cmd->add_flag("--json", o->json, "one JSON object instead of text");
  cmd->callback([o, &exit_code] { exit_code = bench_gemv(*o); });
}

}  // namespace pagoda::cli
