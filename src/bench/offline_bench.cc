// The offline throughput benchmark.
#include "bench/offline_bench.h"

#include "bench/random_prompt.h"
#include "bench/request_driver.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>

namespace pagoda::bench {
namespace {

Result<std::vector<std::vector<TokenId>>> make_prompts(const Tokenizer& tok, const OfflineOptions& o,
                                                       std::mt19937_64& rng) {
  std::vector<std::vector<TokenId>> prompts;
  if (!o.dataset.empty()) {
    std::ifstream in(o.dataset);
    if (!in) return make_error(fmt::format("cannot read dataset {}", o.dataset));
    std::vector<std::vector<TokenId>> lines;
    for (std::string line; std::getline(in, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(tok.encode(line, true));
    if (lines.empty()) return make_error(fmt::format("dataset {} has no non-empty line", o.dataset));
    for (int32_t i = 0; i < o.num_prompts; ++i) prompts.push_back(lines[size_t(i) % lines.size()]);
    return prompts;
  }
  for (int32_t i = 0; i < o.num_prompts; ++i) prompts.push_back(random_prompt(tok, o.input_len.draw(rng), rng));
  return prompts;
}

}  // namespace

Result<OfflineReport> run_offline_bench(Engine& engine, const Tokenizer& tokenizer, const OfflineOptions& o) {
  if (o.num_prompts < 1) return make_error("--num-prompts must be at least 1");
  std::mt19937_64 rng(o.seed);
  PAGODA_ASSIGN_OR_RETURN(auto prompts, make_prompts(tokenizer, o, rng));
  std::vector<DrivenRequest> requests;
  for (auto& p : prompts) {
    DrivenRequest d;  // all arrive at once
    GenerateRequest& r = d.request;
    r.prompt = std::move(p);
    r.sampling.temperature = float(o.temperature);
    r.sampling.seed = rng();
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = o.output_len.draw(rng);
    requests.push_back(std::move(d));
  }
  const EngineStats before = engine.stats();
  const int32_t block_size = engine.config().kv.block_size;

  // A sampler of the engine's figures while the requests run.
  std::atomic<bool> done{false};
  OfflineReport report;
  double wasted_sum = 0.0;
  int64_t wasted_samples = 0;
  std::thread monitor([&] {
    while (!done.load()) {
      const EngineStats s = engine.stats();
      report.peak_running = std::max(report.peak_running, s.num_running);
      double usage = s.kv_usage;
      int64_t allocated = s.kv.num_allocated_slots, wasted = s.kv.num_wasted_slots;
      if (o.contiguous) {
        usage = double(o.contiguous->num_reserved_blocks(s.num_running)) / double(s.kv.num_total_blocks);
        allocated = o.contiguous->num_reserved_blocks(s.num_running) * block_size;
        wasted = o.contiguous->num_wasted_slots(s.num_running, s.kv, block_size);
      }
      report.peak_kv_usage = std::max(report.peak_kv_usage, usage);
      if (allocated > 0) {
        wasted_sum += double(wasted) / double(allocated);
        ++wasted_samples;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  Result<DriveReport> driven = drive_requests(engine, std::move(requests), o.batching);
  done = true;
  monitor.join();
  if (!driven.ok()) return driven.status();
  const double duration_s = driven->duration_s;

  std::vector<double> ttft, tpot, itl, e2e, queue;
  for (const DrivenResult& out : driven->results) {
    report.num_input_tokens += out.num_prompt_tokens;
    report.num_output_tokens += out.num_output_tokens;
    const RequestTiming& t = out.timing;
    ttft.push_back(t.ttft_s() * 1e3);
    e2e.push_back(t.e2e_s() * 1e3);
    queue.push_back(t.queue_time_s() * 1e3);
    if (t.token_us.size() >= 2) tpot.push_back(t.tpot_s() * 1e3);
    for (size_t i = 1; i < t.token_us.size(); ++i) itl.push_back(double(t.token_us[i] - t.token_us[i - 1]) / 1e3);
  }
  const EngineStats after = engine.stats();
  report.num_requests = int32_t(driven->results.size());
  report.duration_s = duration_s;
  report.requests_per_s = double(report.num_requests) / duration_s;
  report.input_tok_s = double(report.num_input_tokens) / duration_s;
  report.output_tok_s = double(report.num_output_tokens) / duration_s;
  report.total_tok_s = report.input_tok_s + report.output_tok_s;
  report.ttft_ms = LatencySummary::of(std::move(ttft));
  report.tpot_ms = LatencySummary::of(std::move(tpot));
  report.itl_ms = LatencySummary::of(std::move(itl));
  report.e2e_ms = LatencySummary::of(std::move(e2e));
  report.queue_ms = LatencySummary::of(std::move(queue));
  report.mean_wasted_slot_fraction = wasted_samples > 0 ? wasted_sum / double(wasted_samples) : 0.0;
  report.peak_running = std::max(report.peak_running, after.peak_num_running);  // steps shorter than a sample
  report.num_preemptions = after.num_preemptions - before.num_preemptions;
  report.num_padding_tokens = driven->num_padding_tokens;
  report.num_prefix_hit_tokens = after.kv.num_prefix_hit_tokens - before.kv.num_prefix_hit_tokens;
  report.num_prefix_query_tokens = after.kv.num_prefix_query_tokens - before.kv.num_prefix_query_tokens;
  return report;
}

namespace {

std::string summary_text(const char* name, const LatencySummary& s) {
  return fmt::format("  {:<14} mean {:10.2f}  p50 {:10.2f}  p90 {:10.2f}  p99 {:10.2f} ms\n", name, s.mean, s.p50,
                     s.p90, s.p99);
}

}  // namespace

std::string offline_report_json(const OfflineReport& r) {
  return fmt::format(
      "{{\"bench\":\"offline\",\"num_requests\":{},\"duration_s\":{:.3f},\"requests_per_s\":{:.4f},"
      "\"input_tok_s\":{:.3f},\"output_tok_s\":{:.3f},\"total_tok_s\":{:.3f},\"num_input_tokens\":{},"
      "\"num_output_tokens\":{},\"ttft_ms\":{},\"tpot_ms\":{},\"itl_ms\":{},\"e2e_ms\":{},\"queue_ms\":{},"
      "\"peak_running\":{},\"peak_kv_usage\":{:.4f},\"mean_wasted_slot_fraction\":{:.4f},\"num_preemptions\":{},"
      "\"num_padding_tokens\":{},\"prefix_hit_tokens\":{},\"prefix_query_tokens\":{}}}",
      r.num_requests, r.duration_s, r.requests_per_s, r.input_tok_s, r.output_tok_s, r.total_tok_s, r.num_input_tokens,
      r.num_output_tokens, latency_summary_json(r.ttft_ms), latency_summary_json(r.tpot_ms),
      latency_summary_json(r.itl_ms), latency_summary_json(r.e2e_ms), latency_summary_json(r.queue_ms), r.peak_running,
      r.peak_kv_usage, r.mean_wasted_slot_fraction, r.num_preemptions, r.num_padding_tokens, r.num_prefix_hit_tokens,
      r.num_prefix_query_tokens);
}

std::string offline_report_text(const OfflineReport& r) {
  std::string s =
      fmt::format("{} requests in {:.2f} s: {:.3f} requests/s, {:.2f} input + {:.2f} output = {:.2f} tokens/s\n",
                  r.num_requests, r.duration_s, r.requests_per_s, r.input_tok_s, r.output_tok_s, r.total_tok_s);
  s += summary_text("TTFT", r.ttft_ms);
  s += summary_text("TPOT", r.tpot_ms);
  s += summary_text("ITL", r.itl_ms);
  s += summary_text("E2E", r.e2e_ms);
  s += summary_text("queue", r.queue_ms);
  s += fmt::format(
      "  peak running {} sequences, peak KV usage {:.1f}%, wasted KV slots {:.2f}% of allocated, {} preemptions, "
      "{} padding rows, prefix cache {} of {} prompt tokens\n",
      r.peak_running, r.peak_kv_usage * 100.0, r.mean_wasted_slot_fraction * 100.0, r.num_preemptions,
      r.num_padding_tokens, r.num_prefix_hit_tokens, r.num_prefix_query_tokens);
  return s;
}

}  // namespace pagoda::bench
