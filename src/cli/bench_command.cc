// `pagoda bench membw [--threads N] [--array-mib M] [--reps R] [--json]` and
// `pagoda bench latency [-m MODEL] [--prompt-len 512 | --prompt TEXT] [--gen 128] [--threads N] [--membw GBPS]
// [--spec ngram --spec-tokens K [--rounds R]] [--json]`: with --spec, each round times the request without and
// then with speculative decoding, in this one process, and reports the decode speed-up, whether the greedy
// tokens are identical, the acceptance rate and the tokens per decode step.
#include "cli/bench_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/latency_bench.h"
#include "bench/memory_bandwidth.h"
#include "cli/bench_ablation_command.h"
#include "cli/bench_gemv_command.h"
#include "cli/bench_isa_command.h"
#include "cli/bench_kv_memory_command.h"
#include "cli/bench_offline_command.h"
#include "cli/bench_scenario_commands.h"
#include "cli/bench_serve_command.h"
#include "cli/bench_structured_command.h"
#include "cli/common_options.h"
#include "cli/model_loading.h"
#include "cli/spec_options.h"
#include "core/thread_pool.h"
#include "engine/engine_plan.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"

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
  std::string prompt_text;  // instead of random prompt tokens
  SpecCliOptions spec;
  int32_t num_rounds = 1;  // with --spec: rounds of (without, with)
  bool json = false;
};

// Without and then with speculative decoding, `num_rounds` times: decode tokens/s of each, their ratio, identical
// greedy tokens, acceptance. Bandwidth and MBU are left out (the comparison is of the two runs).
int bench_latency_spec(const LatencyCliOptions& o, const LoadedModel& loaded, int32_t num_threads,
                       bench::LatencyOptions options) {
  EngineConfig spec_config;
  const Result<SpecResources> spec_resources = load_spec_resources(o.spec, *loaded.tokenizer);
  if (!spec_resources.ok()) return report_error(spec_resources.error());
  if (Status s = apply_spec_options(o.spec, spec_config, *spec_resources); !s.ok()) return report_error(s.message());
  if (o.num_rounds < 1 || o.num_rounds > 1000) return report_error("--rounds must be in [1, 1000]");
  options.membw_gbps = 1.0;  // not measured, not reported
  std::vector<double> ratios, cpu_ratios;
  bool identical = true;
  int64_t num_draft = 0, num_accepted = 0, num_steps = 0, num_tokens = 0;
  double plain_sum = 0.0, spec_sum = 0.0;
  if (!o.json)
    std::printf("model %s, %s threads, %d-token prompt, %d tokens, speculative decoding %s\n", loaded.source.c_str(),
                num_threads > 0 ? std::to_string(num_threads).c_str() : "all cores'",
                options.prompt.empty() ? options.prompt_len : int32_t(options.prompt.size()), options.num_generated,
                describe_spec(spec_config).c_str());
  for (int32_t round = 0; round < o.num_rounds; ++round) {
    bench::LatencyOptions plain = options;
    plain.spec = SpecDecodeConfig{};
    plain.num_speculative_tokens = 0;
    const Result<bench::LatencyReport> a = bench::run_latency_bench(loaded, num_threads, plain);
    if (!a.ok()) return report_error(a.error());
    bench::LatencyOptions spec = options;
    spec.spec = spec_config.spec;
    spec.num_speculative_tokens = spec_config.scheduler.num_speculative_tokens;
    spec.adaptive_num_speculative_tokens = spec_config.scheduler.adaptive_num_speculative_tokens;
    const Result<bench::LatencyReport> b = bench::run_latency_bench(loaded, num_threads, spec);
    if (!b.ok()) return report_error(b.error());
    const double ratio = a->decode_tok_s > 0.0 ? b->decode_tok_s / a->decode_tok_s : 0.0;
    ratios.push_back(ratio);
    const double cpu_ratio = b->cpu_us_per_token > 0.0 ? a->cpu_us_per_token / b->cpu_us_per_token : 0.0;
    cpu_ratios.push_back(cpu_ratio);
    identical = identical && a->output == b->output;
    num_draft += b->num_draft_tokens;
    num_accepted += b->num_accepted_tokens;
    num_steps += b->num_decode_steps;
    num_tokens += int64_t(b->output.size()) - 1;
    plain_sum += a->decode_tok_s;
    spec_sum += b->decode_tok_s;
    if (!o.json)
      std::printf(
          "  round %d: decode %9.2f -> %9.2f tokens/s (%.2fx); CPU %.1f -> %.1f us/token (%.2fx); %lld of %lld "
          "drafts accepted, %.2f tokens/step%s\n",
          round + 1, a->decode_tok_s, b->decode_tok_s, ratio, a->cpu_us_per_token, b->cpu_us_per_token, cpu_ratio,
          static_cast<long long>(b->num_accepted_tokens), static_cast<long long>(b->num_draft_tokens),
          b->num_decode_steps > 0 ? double(b->output.size() - 1) / double(b->num_decode_steps) : 0.0,
          a->output == b->output ? "" : ", OUTPUT DIFFERS");
    if (!o.json && b->step_per_token_us > 0.0)
      std::printf("           step cost fitted: %.1f us + %.1f us per token (a token costs %.2f of a 1-token step)\n",
                  b->step_fixed_us, b->step_per_token_us,
                  b->step_per_token_us / (b->step_fixed_us + b->step_per_token_us));
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::sort(cpu_ratios.begin(), cpu_ratios.end());
  const double cpu_median = cpu_ratios[cpu_ratios.size() / 2];
  const double acceptance = num_draft > 0 ? double(num_accepted) / double(num_draft) : 0.0;
  const double tokens_per_step = num_steps > 0 ? double(num_tokens) / double(num_steps) : 0.0;
  if (o.json) {
    std::printf(
        "{\"bench\":\"latency_spec\",\"model\":\"%s\",\"spec\":\"%s\",\"rounds\":%d,\"decode_tok_s_plain\":%.3f,"
        "\"decode_tok_s_spec\":%.3f,\"speedup_median\":%.4f,\"speedup_min\":%.4f,\"speedup_max\":%.4f,"
        "\"cpu_speedup_median\":%.4f,\"identical\":%s,\"acceptance_rate\":%.4f,\"tokens_per_step\":%.4f}\n",
        loaded.source.c_str(), describe_spec(spec_config).c_str(), o.num_rounds, plain_sum / o.num_rounds,
        spec_sum / o.num_rounds, median, sorted.front(), sorted.back(), cpu_median, identical ? "true" : "false",
        acceptance, tokens_per_step);
  } else {
    std::printf(
        "decode speed-up with speculation: median %.2fx (min %.2fx, max %.2fx) over %d rounds; CPU time per "
        "token: median %.2fx less\ndecode tokens/s, mean of the rounds: %.0f without, %.0f with\ngreedy tokens "
        "identical: %s\nacceptance rate %.1f %%, %.2f tokens per decode step\n",
        median, sorted.front(), sorted.back(), o.num_rounds, cpu_median, plain_sum / o.num_rounds,
        spec_sum / o.num_rounds, identical ? "yes" : "NO", 100.0 * acceptance, tokens_per_step);
  }
  return identical ? 0 : 1;
}

// [{"type":"f16","fits":true,"bytes_per_token":...,"max_seqs":...}, ...] of the report's capacity table.
std::string capacity_json(const bench::LatencyReport& r) {
  std::string out = "[";
  for (const bench::KvTypeCapacity& c : r.kv_capacity) {
    if (out.size() > 1) out += ",";
    out += fmt::format(R"({{"type":"{}","fits":{},"bytes_per_token":{},"max_seqs":{}}})", kv_dtype_name(c.type),
                       c.fits ? "true" : "false", c.bytes_per_token, c.max_seqs);
  }
  return out + "]";
}

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
  bench::LatencyOptions options = o.latency;
  if (!o.prompt_text.empty()) options.prompt = loaded->tokenizer->encode(o.prompt_text, true);
  const int64_t total =
      int64_t(options.prompt.empty() ? o.latency.prompt_len : int32_t(options.prompt.size())) + o.latency.num_generated;
  if (total > context)
    return report_error(fmt::format("--prompt-len + --gen = {} exceeds the model's context of {}", total, context));
  report_unused_by_single_sequence(*config, "bench latency");
  options.membw_gbps = o.membw_gbps;
  const Result<KvCacheTypes> kv_types = resolve_kv_types(*config);
  if (!kv_types.ok()) return report_error(kv_types.error());
  options.kv_types = *kv_types;
  options.block_size = config->kv_cache.block_size;
  // As `pagoda run` sizes its pool: 0 (one thread per core), or 1 for a tiny model.
  const int32_t num_threads = resolve_num_threads(config->threads, loaded->model->config());
  if (o.spec.method != "none") return bench_latency_spec(o, *loaded, num_threads, options);
  const Result<bench::LatencyReport> report = bench::run_latency_bench(*loaded, num_threads, options);
  if (!report.ok()) return report_error(report.error());
  const bench::LatencyReport& r = *report;
  if (o.json) {
    std::printf(
        "{\"bench\":\"latency\",\"model\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"prompt_len\":%d,\"gen\":%d,"
        "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f,\"ttft_ms\":%.3f,\"tpot_ms_mean\":%.4f,"
        "\"tpot_ms_p50\":%.4f,\"tpot_ms_p99\":%.4f,\"mbu\":%.4f,\"membw_gbps\":%.2f,"
        "\"weight_bytes_per_token\":%.0f,\"kv_bytes_per_token\":%.0f,\"cache_type_k\":\"%s\",\"cache_type_v\":\"%s\","
        "\"kv_cache_bytes_per_token\":%lld,\"kv_capacity\":%s}\n",
        loaded->source.c_str(), isa_name(kernels::best_kernels().isa).data(), r.num_threads, r.prompt_len,
        r.num_generated, r.prefill_tok_s, r.decode_tok_s, r.ttft_ms, r.tpot_ms_mean, r.tpot_ms_p50, r.tpot_ms_p99,
        r.mbu, r.membw_gbps, r.weight_bytes_per_token, r.kv_bytes_per_token, kv_dtype_name(r.kv_types.k),
        kv_dtype_name(r.kv_types.v), static_cast<long long>(r.kv_cache_bytes_per_token), capacity_json(r).c_str());
  } else {
    std::printf(
        "model %s, %d threads, %s\n  prefill pp%d   %9.2f tokens/s\n  decode  tg%d   %9.2f tokens/s\n"
        "  TTFT          %9.3f ms\n  TPOT mean     %9.4f ms (p50 %.4f, p99 %.4f)\n"
        "  bytes/token   %9.2f MB weights + %.2f MB KV\n  bandwidth     %9.2f GB/s (read-only)\n"
        "  MBU           %9.1f %%\n",
        loaded->source.c_str(), r.num_threads, kernels::isa_summary(kernels::best_kernels()).c_str(), r.prompt_len,
        r.prefill_tok_s, r.num_generated, r.decode_tok_s, r.ttft_ms, r.tpot_ms_mean, r.tpot_ms_p50, r.tpot_ms_p99,
        r.weight_bytes_per_token / 1e6, r.kv_bytes_per_token / 1e6, r.membw_gbps, r.mbu * 100.0);
    std::printf("  KV cache      %s, %lld bytes per token\n", kv_stored_types_name(r.kv_types, r.kv_v_in_k).c_str(),
                static_cast<long long>(r.kv_cache_bytes_per_token));
    std::printf("  max concurrent sequences of %d tokens in %lld MiB of KV:", r.prompt_len + r.num_generated,
                static_cast<long long>(bench::kKvCapacityBudgetBytes >> 20));
    for (const bench::KvTypeCapacity& c : r.kv_capacity) {
      if (c.fits)
        std::printf(" %s %d (%lld B/token)", kv_dtype_name(c.type), c.max_seqs,
                    static_cast<long long>(c.bytes_per_token));
      else
        std::printf(" %s n/a (heads not a multiple of 32)", kv_dtype_name(c.type));
    }
    std::printf("\n");
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
  add_rope_scaling_options(*lat, latency->common);
  lat->add_option("--prompt-len", latency->latency.prompt_len, "prompt tokens (pp)")->capture_default_str();
  lat->add_option("--gen", latency->latency.num_generated, "generated tokens (tg)")->capture_default_str();
  lat->add_option("--membw", latency->membw_gbps, "memory bandwidth in GB/s (default: measured)");
  lat->add_option("--seed", latency->latency.seed, "seed of the random prompt")->capture_default_str();
  lat->add_option("--prompt", latency->prompt_text, "prompt text (BOS added) instead of --prompt-len random tokens");
  add_spec_options(*lat, latency->spec);
  lat->add_option("--rounds", latency->num_rounds, "with --spec: rounds of (without, with) speculation")
      ->capture_default_str();
  lat->add_flag("--json", latency->json, "one JSON object instead of text");
  lat->callback([latency, &exit_code] { exit_code = bench_latency(*latency); });

  add_bench_offline_command(*bench, exit_code);
  add_bench_scenario_commands(*bench, exit_code);
  add_bench_serve_command(*bench, exit_code);
  add_bench_ablation_command(*bench, exit_code);
  add_bench_structured_command(*bench, exit_code);
  add_bench_isa_command(*bench, exit_code);
  add_bench_gemv_command(*bench, exit_code);
  add_bench_kv_memory_command(*bench, exit_code);
}

}  // namespace pagoda::cli
