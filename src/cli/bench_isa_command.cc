// `pagoda bench isa [-m MODEL] [--levels avx2,avx512] [--kernels-only] [--prompt-len 512] [--gen 128] [--threads N]`:
// each instruction-set level this CPU runs, on the same kernels' inputs and then the same model file, in one
// process: the kernel table of bench/isa_kernel_bench.h, then pp/tg per level (the model loaded once per level, as
// the layout it is repacked into is the level's; the levels take turns in each round), each figure with its ratio to
// the avx2 level.
#include "cli/bench_isa_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "bench/isa_kernel_bench.h"
#include "bench/latency_bench.h"
#include "bench/memory_bandwidth.h"
#include "cli/common_options.h"
#include "cli/model_loading.h"
#include "core/thread_pool.h"
#include "engine/engine_plan.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"

namespace pagoda::cli {
namespace {

using kernels::Isa;

struct IsaBenchOptions {
  CommonOptions common;
  std::string levels;  // comma-separated; empty: every level this CPU runs
  bool kernels_only = false;
  bool model_only = false;
  int32_t rounds = 2;
  bench::LatencyOptions latency;
};

Result<std::vector<Isa>> resolve_levels(const std::string& names) {
  std::vector<Isa> levels;
  if (names.empty()) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
      if (isa != Isa::kScalar && kernels::cpu_supports(isa)) levels.push_back(isa);
    if (levels.empty()) levels.push_back(Isa::kScalar);
    return levels;
  }
  std::stringstream in(names);
  std::string name;
  while (std::getline(in, name, ',')) {
    const std::optional<Isa> isa = kernels::parse_isa(name);
    if (!isa)
      return make_error(fmt::format("--levels: '{}' is not a level (scalar, avx2, avx_vnni, avx512, amx)", name));
    if (!kernels::cpu_supports(*isa)) return make_error(fmt::format("--levels: {} is not available on this CPU", name));
    levels.push_back(*isa);
  }
  if (levels.empty()) return make_error("--levels names no level");
  return levels;
}

// Where avx2 is among the levels, each figure over its; else over the first level's.
size_t baseline_index(const std::vector<Isa>& levels) {
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i] == Isa::kAvx2) return i;
  return 0;
}

void print_header(const std::vector<Isa>& levels, const char* first) {
  std::printf("%-34s", first);
  for (Isa isa : levels) std::printf(" %10s", isa_name(isa).data());
  std::printf("  %s/%s\n", isa_name(levels.back()).data(), "base");
}

// The values, then the last (highest) level's over the base level's.
void print_row(const std::string& name, const std::vector<double>& values, size_t base, const char* fmt_value) {
  std::printf("%-34s", name.c_str());
  for (double v : values) std::printf(fmt_value, v);
  if (values[base] > 0.0)
    std::printf("  %8.2fx\n", values.back() / values[base]);
  else
    std::printf("\n");
}

int bench_isa(const IsaBenchOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  Result<std::vector<Isa>> levels = resolve_levels(o.levels);
  if (!levels.ok()) return report_error(levels.error());
  if (o.kernels_only && o.model_only) return report_error("--kernels-only and --model-only exclude each other");
  if (o.rounds < 1 || o.rounds > 100) return report_error("--rounds must be in [1, 100]");
  ThreadPool pool(config->threads);
  const size_t base = baseline_index(*levels);
  std::printf("cpu: %s\nlevels: best here %s; %d threads; ratios over %s\n",
              kernels::isa_summary(*kernels::kernels_for(kernels::best_supported_isa())).c_str(),
              isa_name(kernels::best_supported_isa()).data(), pool.num_threads(), isa_name((*levels)[base]).data());

  if (!o.model_only) {
    std::printf(
        "\nkernels (best of repetitions; matmuls on a 5632 x 2048 weight, split over the pool as the model does)\n");
    print_header(*levels, "kernel");
    for (const bench::IsaKernelFigure& f : bench::run_isa_kernel_bench(pool, *levels, {}))
      print_row(f.kernel + " " + f.unit, f.per_level, base, " %10.2f");
    std::fflush(stdout);
  }
  if (o.kernels_only) return 0;

  Result<ModelOptions> model_options = resolve_model_options(o.common);
  if (!model_options.ok()) return report_error(model_options.error());
  report_unused_by_single_sequence(*config, "bench isa");
  bench::LatencyOptions latency = o.latency;
  const Result<KvCacheTypes> kv_types = resolve_kv_types(*config);
  if (!kv_types.ok()) return report_error(kv_types.error());
  latency.kv_types = *kv_types;
  latency.block_size = config->kv_cache.block_size;
  // Every level's model stays loaded (each repacked into its level's layout), and the levels take turns within each
  // round, each figure's best round counting: a burst of load elsewhere then slows a round, not one level.
  std::vector<LoadedModel> models;
  for (Isa isa : *levels) {
    Result<LoadedModel> loaded = load_configured_model(*config, *kernels::kernels_for(isa), *model_options);
    if (!loaded.ok()) return report_error(loaded.error());
    const int64_t total = int64_t(latency.prompt_len) + latency.num_generated;
    if (total > loaded->model->config().context_length)
      return report_error(fmt::format("--prompt-len + --gen = {} exceeds the model's context", total));
    models.push_back(std::move(loaded).value());
  }
  // The model runs take the threads `run` and `serve` would (one for a model under 4M parameters), not the kernel
  // table's pool of every core; MBU is over the bandwidth those threads reach, as `bench latency` measures it.
  const int32_t model_threads = resolve_num_threads(config->threads, models.front().model->config());
  latency.membw_gbps = bench::read_bandwidth_gbps(model_threads);
  std::vector<double> pp(levels->size(), 0.0), tg(levels->size(), 0.0), mbu(levels->size(), 0.0);
  for (int32_t round = 0; round < o.rounds; ++round) {
    for (size_t l = 0; l < levels->size(); ++l) {
      // The engine of each run owns its threads (the pool's workers sleep by then).
      const Result<bench::LatencyReport> report = bench::run_latency_bench(models[l], model_threads, latency);
      if (!report.ok()) return report_error(report.error());
      const bench::LatencyReport& r = *report;
      pp[l] = std::max(pp[l], r.prefill_tok_s);
      tg[l] = std::max(tg[l], r.decode_tok_s);
      mbu[l] = std::max(mbu[l], r.mbu * 100.0);
      std::fprintf(stderr, "pagoda: round %d, %s: pp%d %.2f tok/s, tg%d %.2f tok/s\n", round + 1,
                   isa_name((*levels)[l]).data(), latency.prompt_len, r.prefill_tok_s, latency.num_generated,
                   r.decode_tok_s);
    }
  }
  const std::string source = models.front().source;
  std::printf("\nmodel %s (%d threads; read bandwidth %.2f GB/s; best of %d rounds)\n", source.c_str(), model_threads,
              *latency.membw_gbps, o.rounds);
  print_header(*levels, "figure");
  print_row(fmt::format("prefill pp{} tok/s", latency.prompt_len), pp, base, " %10.2f");
  print_row(fmt::format("decode tg{} tok/s", latency.num_generated), tg, base, " %10.2f");
  print_row("decode MBU %", mbu, base, " %10.1f");
  return 0;
}

}  // namespace

void add_bench_isa_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<IsaBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "isa", "Each instruction-set level's kernels, then pp/tg on one model, in one run with ratios over avx2");
  add_common_options(*cmd, o->common);
  cmd->add_option("--levels", o->levels, "comma-separated levels (default: every SIMD level this CPU runs)");
  cmd->add_flag("--kernels-only", o->kernels_only, "the kernel table only, no model");
  cmd->add_flag("--model-only", o->model_only, "the model figures only, no kernel table");
  cmd->add_option("--prompt-len", o->latency.prompt_len, "prompt tokens (pp)")->capture_default_str();
  cmd->add_option("--gen", o->latency.num_generated, "generated tokens (tg)")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "model rounds, the levels taking turns in each; the best counts")
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = bench_isa(*o); });
}

}  // namespace pagoda::cli
