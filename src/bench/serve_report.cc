// Text and JSON renderings of a serving benchmark run.
#include "bench/serve_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace pagoda::bench {
namespace {

using json = nlohmann::json;

std::string percent_label(double p) {
  return p == std::floor(p) ? fmt::format("{}", int64_t(p)) : fmt::format("{}", p);
}

std::string row(std::string_view name, std::string value) { return fmt::format("{:<40} {:<10}\n", name, value); }

void append_section(std::string& out, std::string_view title, std::string_view metric, const LatencyStats& s) {
  out += fmt::format("{:-^50}\n", title);
  out += row(fmt::format("Mean {} (ms):", metric), fmt::format("{:.2f}", s.mean));
  out += row(fmt::format("Median {} (ms):", metric), fmt::format("{:.2f}", s.median));
  for (const auto& [p, v] : s.percentiles)
    out += row(fmt::format("P{} {} (ms):", percent_label(p), metric), fmt::format("{:.2f}", v));
}

void put_stats(json& j, std::string_view metric, const LatencyStats& s) {
  j[fmt::format("mean_{}_ms", metric)] = s.mean;
  j[fmt::format("median_{}_ms", metric)] = s.median;
  j[fmt::format("std_{}_ms", metric)] = s.std_dev;
  for (const auto& [p, v] : s.percentiles) j[fmt::format("p{}_{}_ms", percent_label(p), metric)] = v;
}

}  // namespace

std::string format_serve_report(const ServeRunInfo& info, const ServeMetrics& m) {
  std::string out = fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  out += row("Successful requests:", fmt::format("{}", m.num_completed));
  out += row("Failed requests:", fmt::format("{}", m.num_failed));
  if (info.max_concurrency > 0) out += row("Maximum request concurrency:", fmt::format("{}", info.max_concurrency));
  out += row("Benchmark duration (s):", fmt::format("{:.2f}", m.duration_s));
  out += row("Total input tokens:", fmt::format("{}", m.total_input_tokens));
  out += row("Total generated tokens:", fmt::format("{}", m.total_output_tokens));
  out += row("Request throughput (req/s):", fmt::format("{:.2f}", m.request_throughput));
  out += row("Output token throughput (tok/s):", fmt::format("{:.2f}", m.output_throughput));
  out += row("Total Token throughput (tok/s):", fmt::format("{:.2f}", m.total_token_throughput));
  append_section(out, "Time to First Token", "TTFT", m.ttft_ms);
  append_section(out, "Time per Output Token (excl. 1st token)", "TPOT", m.tpot_ms);
  append_section(out, "Inter-token Latency", "ITL", m.itl_ms);
  append_section(out, "End-to-end Latency", "E2EL", m.e2el_ms);
  out += std::string(50, '=') + "\n";
  return out;
}

std::string serve_report_json(const ServeRunInfo& info, const ServeMetrics& m,
                              std::span<const ServeRequestRecord> records) {
  json j;
  j["base_url"] = info.base_url;
  j["endpoint"] = info.endpoint;
  j["model_id"] = info.model;
  j["dataset"] = info.dataset;
  j["num_prompts"] = info.num_prompts;
  j["request_rate"] = std::isinf(info.request_rate) ? json("inf") : json(info.request_rate);
  j["burstiness"] = info.burstiness;
  j["max_concurrency"] = info.max_concurrency > 0 ? json(info.max_concurrency) : json(nullptr);
  j["duration"] = m.duration_s;
  j["completed"] = m.num_completed;
  j["failed"] = m.num_failed;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  put_stats(j, "ttft", m.ttft_ms);
  put_stats(j, "tpot", m.tpot_ms);
  put_stats(j, "itl", m.itl_ms);
  put_stats(j, "e2el", m.e2el_ms);
  json requests = json::array();
  for (const ServeRequestRecord& r : records) {
    requests.push_back({{"success", r.success},
                        {"error", r.error},
                        {"send_offset_s", r.send_offset_s},
                        {"prompt_len", r.prompt_len},
                        {"output_tokens", r.output_tokens},
                        {"ttft_s", r.ttft_s},
                        {"e2e_s", r.e2e_s},
                        {"itl_s", r.itl_s}});
  }
  j["requests"] = std::move(requests);
  // Error texts come from the server's responses and may hold invalid UTF-8 (or a cut character): replaced, so
  // that a bad response cannot make the report throw.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace pagoda::bench
