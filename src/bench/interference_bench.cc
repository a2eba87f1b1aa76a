// The long-prompt interference benchmark.
#include "bench/interference_bench.h"

#include <fmt/format.h>

#include <chrono>
#include <random>
#include <thread>

#include "bench/random_prompt.h"

namespace pagoda::bench {
namespace {

// Waits until the engine has sampled `count` more tokens than `base`; false if the engine went idle first.
bool wait_for_generated(const Engine& engine, int64_t base, int64_t count) {
  while (true) {
    const EngineStats s = engine.stats();
    if (s.num_generation_tokens - base >= count) return true;
    if (s.num_running == 0 && s.num_waiting == 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

Result<InterferenceReport> run_interference_bench(Engine& engine, const Tokenizer& tokenizer,
                                                  const InterferenceOptions& o) {
  if (o.num_streams < 1 || o.stream_prompt_len < 1 || o.long_prompt_len < 1 || o.warmup_tokens < 1 || o.tail_tokens < 1)
    return make_error("interference bench: every count must be at least 1");
  const int32_t context = engine.config().max_seq_len;
  if (o.stream_prompt_len + o.warmup_tokens + o.tail_tokens >= context || o.long_prompt_len >= context)
    return make_error(fmt::format("interference bench: the prompts do not fit the context of {} tokens", context));
  std::mt19937_64 rng(o.seed);
  const EngineStats before = engine.stats();

  std::vector<RequestHandle> streams;
  for (int32_t i = 0; i < o.num_streams; ++i) {
    GenerateRequest r;
    r.prompt = random_prompt(tokenizer, o.stream_prompt_len, rng);
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = context - o.stream_prompt_len;  // cancelled long before
    Result<RequestHandle> h = engine.submit(std::move(r));
    if (!h.ok()) {
      for (const RequestHandle& s : streams) engine.cancel(s.id);
      return make_error("a stream was refused: " + h.status().message());
    }
    streams.push_back(*h);
  }
  auto cancel_streams = [&] {
    for (const RequestHandle& s : streams) engine.cancel(s.id);
  };
  if (!wait_for_generated(engine, before.num_generation_tokens, int64_t(o.num_streams) * o.warmup_tokens)) {
    cancel_streams();
    return make_error("the streams ended before their warm-up");
  }

  GenerateRequest long_request;
  long_request.prompt = random_prompt(tokenizer, o.long_prompt_len, rng);
  long_request.prefill_only = true;
  Result<RequestHandle> long_handle = engine.submit(std::move(long_request));
  if (!long_handle.ok()) {
    cancel_streams();
    return make_error("the long prompt was refused: " + long_handle.status().message());
  }
  const RequestTiming long_timing = *long_handle->stream->wait_all().timing;
  wait_for_generated(engine, engine.stats().num_generation_tokens, int64_t(o.num_streams) * o.tail_tokens);
  cancel_streams();

  std::vector<double> all, during, undisturbed;
  for (RequestHandle& s : streams) {
    const RequestTiming t = *s.stream->wait_all().timing;
    for (size_t i = 1; i < t.token_us.size(); ++i) {
      const double ms = double(t.token_us[i] - t.token_us[i - 1]) * 1e-3;
      all.push_back(ms);
      if (t.token_us[i] > long_timing.arrival_us && t.token_us[i - 1] < long_timing.first_token_us)
        during.push_back(ms);
      else
        undisturbed.push_back(ms);
    }
  }
  InterferenceReport report;
  report.itl_ms = LatencySummary::of(std::move(all));
  report.during_itl_ms = LatencySummary::of(std::move(during));
  report.undisturbed_itl_ms = LatencySummary::of(std::move(undisturbed));
  report.itl_p99_over_p50 = report.itl_ms.p50 > 0.0 ? report.itl_ms.p99 / report.itl_ms.p50 : 0.0;
  report.during_p99_over_undisturbed_p50 =
      report.undisturbed_itl_ms.p50 > 0.0 ? report.during_itl_ms.p99 / report.undisturbed_itl_ms.p50 : 0.0;
  report.long_ttft_ms = long_timing.ttft_s() * 1e3;
  const EngineStats after = engine.stats();
  report.num_steps = after.num_steps - before.num_steps;
  report.num_steps_with_decodes = after.num_steps_with_decodes - before.num_steps_with_decodes;
  report.num_mixed_steps = after.num_mixed_steps - before.num_mixed_steps;
  report.last_prefill_budget = after.last_prefill_budget;
  report.step_fixed_ms = after.step_time_fixed_us * 1e-3;
  report.step_per_token_ms = after.step_time_per_token_us * 1e-3;
  return report;
}

std::string interference_report_text(const InterferenceReport& r) {
  return fmt::format(
      "  stream ITL      p50 {:9.2f}  p90 {:9.2f}  p99 {:9.2f}  max {:9.2f} ms ({} samples)\n"
      "  during prefill  p50 {:9.2f}  p90 {:9.2f}  p99 {:9.2f}  max {:9.2f} ms ({} samples)\n"
      "  undisturbed     p50 {:9.2f}  p90 {:9.2f}  p99 {:9.2f}  max {:9.2f} ms ({} samples)\n"
      "  ITL p99 / p50   {:.2f}x; during-prefill p99 / undisturbed p50 {:.2f}x; long prompt TTFT {:.1f} ms; {} "
      "engine steps\n"
      "  prefill budget  {} of {} steps with decodes took prompt tokens; last budget {} tokens; step model {:.3f} ms + "
      "{:.3f} ms a token\n",
      r.itl_ms.p50, r.itl_ms.p90, r.itl_ms.p99, r.itl_ms.max, r.itl_ms.count, r.during_itl_ms.p50, r.during_itl_ms.p90,
      r.during_itl_ms.p99, r.during_itl_ms.max, r.during_itl_ms.count, r.undisturbed_itl_ms.p50,
      r.undisturbed_itl_ms.p90, r.undisturbed_itl_ms.p99, r.undisturbed_itl_ms.max, r.undisturbed_itl_ms.count,
      r.itl_p99_over_p50, r.during_p99_over_undisturbed_p50, r.long_ttft_ms, r.num_steps, r.num_mixed_steps,
      r.num_steps_with_decodes, r.last_prefill_budget, r.step_fixed_ms, r.step_per_token_ms);
}

std::string interference_report_json(const InterferenceReport& r) {
  return fmt::format(
      "{{\"itl_ms\":{},\"during_prefill_itl_ms\":{},\"undisturbed_itl_ms\":{},\"itl_p99_over_p50\":{:.3f},"
      "\"during_p99_over_undisturbed_p50\":{:.3f},\"long_ttft_ms\":{:.3f},\"steps\":{},\"steps_with_decodes\":{},"
      "\"mixed_steps\":{},\"last_prefill_budget\":{},\"step_fixed_ms\":{:.4f},\"step_per_token_ms\":{:.4f}}}",
      latency_summary_json(r.itl_ms), latency_summary_json(r.during_itl_ms), latency_summary_json(r.undisturbed_itl_ms),
      r.itl_p99_over_p50, r.during_p99_over_undisturbed_p50, r.long_ttft_ms, r.num_steps, r.num_steps_with_decodes,
      r.num_mixed_steps, r.last_prefill_budget, r.step_fixed_ms, r.step_per_token_ms);
}

}  // namespace pagoda::bench
