// `pagoda bench offline [-m MODEL] --num-prompts N --input-len I|A-B --output-len O|A-B [--dataset FILE]
// [engine flags] [--json]`: argument parsing and printing only; the benchmark is bench/offline_bench.
#include "cli/bench_offline_command.h"

#include <cstdio>
#include <memory>

#include "bench/offline_bench.h"
#include "cli/common_options.h"
#include "cli/engine_options.h"
#include "cli/engine_setup.h"
#include "engine/engine.h"

namespace pagoda::cli {
namespace {

struct OfflineCliOptions {
  CommonOptions common;
  EngineCliOptions engine;
  bench::OfflineOptions bench;
  std::string input_len = "128";
  std::string output_len = "128";
  std::string kv_layout = "paged";
  std::string batching = "continuous";
  bool json = false;
};

int bench_offline(OfflineCliOptions& o) {
  Result<bench::LengthRange> input_len = bench::LengthRange::parse(o.input_len, "--input-len");
  if (!input_len.ok()) return report_error(input_len.error());
  Result<bench::LengthRange> output_len = bench::LengthRange::parse(o.output_len, "--output-len");
  if (!output_len.ok()) return report_error(output_len.error());
  o.bench.input_len = *input_len;
  o.bench.output_len = *output_len;
  Result<bench::KvLayout> kv_layout = bench::parse_kv_layout(o.kv_layout);
  if (!kv_layout.ok()) return report_error(kv_layout.error());
  Result<bench::BatchingMode> batching = bench::parse_batching_mode(o.batching);
  if (!batching.ok()) return report_error(batching.error());
  o.bench.batching = *batching;
  Result<PreparedEngine> p = prepare_engine(o.common, o.engine);
  if (!p.ok()) return report_error(p.error());
  if (p->followed) return 0;  // a rank of --tp/--pp other than 0: rank 0 ran the command
  if (*kv_layout == bench::KvLayout::kContiguous) {
    if (Status st = bench::apply_kv_layout(*kv_layout, p->resolved.config); !st.ok()) return report_error(st.message());
    o.bench.contiguous = bench::ContiguousReservation::of(p->resolved.config);
    std::fprintf(stderr,
                 "pagoda: baseline: contiguous KV (each sequence reserves %d blocks): at most %d sequences, no "
                 "prefix cache\n",
                 o.bench.contiguous->blocks_per_seq, p->resolved.config.scheduler.max_num_seqs);
  }
  if (*batching != bench::BatchingMode::kContinuous)
    std::fprintf(stderr, "pagoda: baseline: %s batching, batches of up to %d requests formed by the client\n",
                 std::string(bench::batching_mode_name(*batching)).c_str(), p->resolved.config.scheduler.max_num_seqs);
  const LoadedModel* loaded = &p->loaded;
  Result<std::unique_ptr<Engine>> engine = Engine::create(*loaded->model, *loaded->tokenizer, p->resolved.config);
  if (!engine.ok()) return report_error(engine.error());
  std::fprintf(stderr, "pagoda: bench offline: %d requests, input %s, output %s tokens, model %s, %d threads\n",
               o.bench.num_prompts, o.bench.input_len.to_string().c_str(), o.bench.output_len.to_string().c_str(),
               loaded->source.c_str(), (*engine)->num_threads());
  p->parallel.begin_measurement();
  Result<bench::OfflineReport> report = bench::run_offline_bench(**engine, *loaded->tokenizer, o.bench);
  if (!report.ok()) return report_error(report.error());
  const std::string communication = p->parallel.communication_summary(report->duration_s);
  if (!communication.empty()) std::fprintf(stderr, "pagoda: %s\n", communication.c_str());
  if (o.json) {
    std::printf("%s\n", bench::offline_report_json(*report).c_str());
  } else {
    std::printf("%s", bench::offline_report_text(*report).c_str());
  }
  return 0;
}

}  // namespace

void add_bench_offline_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<OfflineCliOptions>();
  CLI::App* cmd = bench.add_subcommand("offline", "Throughput: N requests through the engine at once");
  add_common_options(*cmd, o->common, /*with_model=*/true, /*splits_over_ranks=*/true);
  add_rope_scaling_options(*cmd, o->common);
  add_engine_options(*cmd, o->engine);
  cmd->add_option("--num-prompts", o->bench.num_prompts, "requests")->capture_default_str();
  cmd->add_option("--input-len", o->input_len, "prompt tokens: N or a range A-B")->capture_default_str();
  cmd->add_option("--output-len", o->output_len, "output tokens: N or a range A-B")->capture_default_str();
  cmd->add_option("--dataset", o->bench.dataset, "text file, one prompt per line (instead of random prompts)");
  cmd->add_option("--seed", o->bench.seed, "seed of prompts and lengths")->capture_default_str();
  cmd->add_option("--temperature", o->bench.temperature, "sampling temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--kv-layout", o->kv_layout,
                  "paged, or contiguous (a naive server's baseline: each sequence reserves max_seq_len, so at most "
                  "blocks / max_seq_len run at once, and nothing is shared)")
      ->capture_default_str();
  cmd->add_option("--batching", o->batching,
                  "continuous; or a naive server's baseline: static (fixed-shape batches: members that end pad until "
                  "the longest ends), static-shrink (the same batches, but members that end leave the step)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object instead of text");
  cmd->callback([o, &exit_code] { exit_code = bench_offline(*o); });
}

}  // namespace pagoda::cli
