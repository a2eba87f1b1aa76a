// `pagoda bench batched [--npp 128] [--ntg 64] [--npl 1,4,8,16]`: llama.cpp's batched-bench table through the
//   engine (one engine, sized for the largest batch, one round per batch size).
// `pagoda bench prefix [--prefix-len 1024] [--suffix-len 16] [--rounds 3]`: TTFT of a request whose prompt
//   shares a cached prefix, against the first request's.
// `pagoda bench interference [--streams 4] [--long-prompt 1024]`: stream inter-token latency while a long
//   prompt arrives, with the configured chunked prefill and then without it, in the same process.
// All take the engine flags and --json.
#include "cli/bench_scenario_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <random>

#include "bench/batched_bench.h"
#include "bench/interference_bench.h"
#include "bench/prefix_bench.h"
#include "cli/engine_setup.h"
#include "engine/engine.h"

namespace pagoda::cli {
namespace {

struct BatchedCliOptions {
  CommonOptions common;
  EngineCliOptions engine = [] {
    EngineCliOptions e;
    e.max_prefill_with_decodes = "0";  // prompts at the full step budget (see bench_batched)
    return e;
  }();
  int32_t prompt_len = 128;
  int32_t gen_len = 64;
  std::vector<int32_t> parallel{1, 4, 8, 16};
  uint64_t seed = 1;
  bool json = false;
};

int bench_batched(BatchedCliOptions& o) {
  if (o.parallel.empty()) return report_error("--npl needs at least one batch size");
  int32_t most = 0;
  for (int32_t n : o.parallel) {
    if (n < 1 || n > 4096) return report_error(fmt::format("--npl values must be in [1, 4096], got {}", n));
    most = std::max(most, n);
  }
  if (!o.engine.batch_size) o.engine.batch_size = most;
  // As llama-batched-bench runs it: the prompts go in (512-token steps, its micro-batch) before the decode is
  // timed, rather than paced by the first sequences' decodes as serving would.
  if (!o.engine.max_batched_tokens) o.engine.max_batched_tokens = std::max(512, o.prompt_len);
  Result<PreparedEngine> p = prepare_engine(o.common, o.engine);
  if (!p.ok()) return report_error(p.error());
  if (p->followed) return 0;  // a rank of --tp/--pp other than 0: rank 0 ran the command
  if (p->resolved.config.scheduler.max_num_seqs < most)
    return report_error(fmt::format("--batch-size {} is smaller than the largest --npl {}",
                                    p->resolved.config.scheduler.max_num_seqs, most));
  Result<std::unique_ptr<Engine>> engine = Engine::create(*p->loaded.model, *p->loaded.tokenizer, p->resolved.config);
  if (!engine.ok()) return report_error(engine.error());
  std::fprintf(stderr, "pagoda: bench batched: model %s, %d threads\n", p->loaded.source.c_str(),
               (*engine)->num_threads());
  std::mt19937_64 rng(o.seed);
  std::vector<bench::BatchedRow> rows;
  if (!o.json) std::printf("%s", bench::batched_table_header().c_str());
  for (int32_t n : o.parallel) {
    Result<bench::BatchedRow> row =
        bench::run_batched_round(**engine, *p->loaded.tokenizer, o.prompt_len, o.gen_len, n, rng);
    if (!row.ok()) return report_error(row.error());
    if (!o.json) {
      std::printf("%s", bench::batched_table_row(*row).c_str());
      std::fflush(stdout);
    }
    rows.push_back(*row);
  }
  if (o.json) std::printf("%s\n", bench::batched_rows_json(rows).c_str());
  return 0;
}

struct PrefixCliOptions {
  CommonOptions common;
  EngineCliOptions engine;
  bench::PrefixOptions bench;
  bool json = false;
};

int bench_prefix(PrefixCliOptions& o) {
  Result<PreparedEngine> p = prepare_engine(o.common, o.engine);
  if (!p.ok()) return report_error(p.error());
  if (p->followed) return 0;  // a rank of --tp/--pp other than 0: rank 0 ran the command
  Result<std::unique_ptr<Engine>> engine = Engine::create(*p->loaded.model, *p->loaded.tokenizer, p->resolved.config);
  if (!engine.ok()) return report_error(engine.error());
  std::fprintf(stderr, "pagoda: bench prefix: %d-token prefix + %d own tokens, model %s, %d threads\n",
               o.bench.prefix_len, o.bench.suffix_len, p->loaded.source.c_str(), (*engine)->num_threads());
  Result<bench::PrefixReport> report = bench::run_prefix_bench(**engine, *p->loaded.tokenizer, o.bench);
  if (!report.ok()) return report_error(report.error());
  std::printf("%s%s", o.json ? bench::prefix_report_json(*report).c_str() : bench::prefix_report_text(*report).c_str(),
              o.json ? "\n" : "");
  return 0;
}

struct InterferenceCliOptions {
  CommonOptions common;
  EngineCliOptions engine;
  bench::InterferenceOptions bench;
  bool json = false;
};

int bench_interference(InterferenceCliOptions& o) {
  if (!o.engine.batch_size) o.engine.batch_size = o.bench.num_streams + 1;
  Result<PreparedEngine> p = prepare_engine(o.common, o.engine);
  if (!p.ok()) return report_error(p.error());
  if (p->followed) return 0;  // a rank of --tp/--pp other than 0: rank 0 ran the command
  // The configured engine first, then the same without chunked prefill (unless it was off already).
  std::vector<EngineConfig> configs{p->resolved.config};
  if (p->resolved.config.scheduler.chunked_prefill) {
    configs.push_back(p->resolved.config);
    configs.back().scheduler.chunked_prefill = false;
  }
  std::fprintf(stderr, "pagoda: bench interference: %d streams, a %d-token prompt arrives, model %s\n",
               o.bench.num_streams, o.bench.long_prompt_len, p->loaded.source.c_str());
  std::vector<bench::InterferenceReport> reports;
  for (const EngineConfig& config : configs) {
    Result<std::unique_ptr<Engine>> engine = Engine::create(*p->loaded.model, *p->loaded.tokenizer, config);
    if (!engine.ok()) return report_error(engine.error());
    Result<bench::InterferenceReport> r = bench::run_interference_bench(**engine, *p->loaded.tokenizer, o.bench);
    if (!r.ok()) return report_error(r.error());
    reports.push_back(*r);
    if (!o.json) {
      std::printf("chunked prefill %s (max_batched_tokens %d):\n%s", config.scheduler.chunked_prefill ? "on" : "off",
                  config.scheduler.max_batched_tokens, bench::interference_report_text(*r).c_str());
      std::fflush(stdout);
    }
  }
  if (o.json) {
    std::printf("{\"bench\":\"interference\",\"chunked\":%s", bench::interference_report_json(reports[0]).c_str());
    if (reports.size() > 1) std::printf(",\"unchunked\":%s", bench::interference_report_json(reports[1]).c_str());
    std::printf("}\n");
  } else if (reports.size() > 1 && reports[0].itl_ms.p99 > 0.0) {
    std::printf("unchunked / chunked stream ITL p99: %.2fx\n", reports[1].itl_ms.p99 / reports[0].itl_ms.p99);
  }
  return 0;
}

}  // namespace

void add_bench_scenario_commands(CLI::App& bench, int& exit_code) {
  {
    auto o = std::make_shared<BatchedCliOptions>();
    CLI::App* cmd = bench.add_subcommand("batched", "Prefill and decode speed of B sequences at once (batched-bench)");
    add_common_options(*cmd, o->common, /*with_model=*/true, /*splits_over_ranks=*/true);
    add_rope_scaling_options(*cmd, o->common);
    add_engine_options(*cmd, o->engine);
    cmd->add_option("--npp", o->prompt_len, "prompt tokens per sequence")->capture_default_str();
    cmd->add_option("--ntg", o->gen_len, "tokens generated per sequence")->capture_default_str();
    cmd->add_option("--npl", o->parallel, "batch sizes, e.g. 1,4,8,16")->delimiter(',')->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed of the random prompts")->capture_default_str();
    cmd->add_flag("--json", o->json, "one JSON object instead of the table");
    cmd->callback([o, &exit_code] { exit_code = bench_batched(*o); });
  }
  {
    auto o = std::make_shared<PrefixCliOptions>();
    CLI::App* cmd = bench.add_subcommand("prefix", "TTFT of a request that shares a cached prompt prefix");
    add_common_options(*cmd, o->common, /*with_model=*/true, /*splits_over_ranks=*/true);
    add_rope_scaling_options(*cmd, o->common);
    add_engine_options(*cmd, o->engine);
    cmd->add_option("--prefix-len", o->bench.prefix_len, "shared prefix tokens (BOS included)")->capture_default_str();
    cmd->add_option("--suffix-len", o->bench.suffix_len, "each request's own tokens")->capture_default_str();
    cmd->add_option("--rounds", o->bench.num_rounds, "rounds, each with a fresh prefix")->capture_default_str();
    cmd->add_option("--seed", o->bench.seed, "seed of the random prompts")->capture_default_str();
    cmd->add_flag("--json", o->json, "one JSON object instead of text");
    cmd->callback([o, &exit_code] { exit_code = bench_prefix(*o); });
  }
  {
    auto o = std::make_shared<InterferenceCliOptions>();
    CLI::App* cmd = bench.add_subcommand("interference",
                                         "Stream inter-token latency while a long prompt arrives (chunked prefill)");
    add_common_options(*cmd, o->common, /*with_model=*/true, /*splits_over_ranks=*/true);
    add_rope_scaling_options(*cmd, o->common);
    add_engine_options(*cmd, o->engine);
    cmd->add_option("--streams", o->bench.num_streams, "decoding streams")->capture_default_str();
    cmd->add_option("--stream-prompt", o->bench.stream_prompt_len, "prompt tokens of each stream")
        ->capture_default_str();
    cmd->add_option("--long-prompt", o->bench.long_prompt_len, "tokens of the arriving prompt")->capture_default_str();
    cmd->add_option("--warmup", o->bench.warmup_tokens, "tokens each stream decodes before it arrives")
        ->capture_default_str();
    cmd->add_option("--tail", o->bench.tail_tokens, "tokens each stream decodes after its first token")
        ->capture_default_str();
    cmd->add_option("--seed", o->bench.seed, "seed of the random prompts")->capture_default_str();
    cmd->add_flag("--json", o->json, "one JSON object instead of text");
    cmd->callback([o, &exit_code] { exit_code = bench_interference(*o); });
  }
}

}  // namespace pagoda::cli
