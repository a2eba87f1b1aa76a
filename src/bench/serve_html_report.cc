// The serving benchmark's HTML page.
#include "bench/serve_html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/svg_chart.h"

namespace pagoda::bench {

std::vector<std::pair<double, double>> throughput_by_concurrency(std::span<const ServeRequestRecord> records,
                                                                 double duration_s, int32_t num_windows) {
  std::vector<std::pair<double, double>> points;
  if (!(duration_s > 0) || num_windows < 1) return points;
  const double width = duration_s / num_windows;
  std::vector<double> busy_s(size_t(num_windows), 0.0), tokens(size_t(num_windows), 0.0);
  auto window_of = [&](double t) { return std::clamp(int32_t(t / width), 0, num_windows - 1); };
  for (const ServeRequestRecord& r : records) {
    if (!r.success) continue;
    const double begin = r.send_offset_s, end = r.send_offset_s + r.e2e_s;
    for (int32_t w = window_of(begin); w <= window_of(end); ++w) {
      const double lo = std::max(begin, w * width), hi = std::min(end, (w + 1) * width);
      if (hi > lo) busy_s[size_t(w)] += hi - lo;
    }
    double t = r.send_offset_s + r.ttft_s;
    tokens[size_t(window_of(t))] += 1;
    for (double gap : r.itl_s) tokens[size_t(window_of(t += gap))] += 1;
  }
  for (int32_t w = 0; w < num_windows; ++w) points.emplace_back(busy_s[size_t(w)] / width, tokens[size_t(w)] / width);
  return points;
}

HtmlReport serve_html_report(const ServeRunInfo& info, const ServeMetrics& m,
                             std::span<const ServeRequestRecord> records) {
  HtmlReport page("pagoda bench serve");
  page.add_paragraph(fmt::format(
      "{}{} — {} prompts from {}, request rate {}, burstiness {}, max concurrency {}", info.base_url, info.endpoint,
      info.num_prompts, info.dataset,
      std::isinf(info.request_rate) ? std::string("inf") : fmt::format("{}", info.request_rate), info.burstiness,
      info.max_concurrency > 0 ? std::to_string(info.max_concurrency) : std::string("unlimited")));
  page.add_table(
      {"successful", "failed", "duration s", "input tokens", "output tokens", "req/s", "output tok/s", "total tok/s"},
      {{std::to_string(m.num_completed), std::to_string(m.num_failed), fmt::format("{:.2f}", m.duration_s),
        std::to_string(m.total_input_tokens), std::to_string(m.total_output_tokens),
        fmt::format("{:.3f}", m.request_throughput), fmt::format("{:.2f}", m.output_throughput),
        fmt::format("{:.2f}", m.total_token_throughput)}});
  std::vector<std::string> header{"ms", "mean", "median"};
  for (const auto& [percent, value] : m.ttft_ms.percentiles) header.push_back(fmt::format("P{:g}", percent));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, s] : {std::pair<const char*, const LatencyStats*>{"TTFT", &m.ttft_ms},
                                {"TPOT", &m.tpot_ms},
                                {"ITL", &m.itl_ms},
                                {"E2EL", &m.e2el_ms}}) {
    rows.push_back({name, fmt::format("{:.2f}", s->mean), fmt::format("{:.2f}", s->median)});
    for (const auto& [percent, value] : s->percentiles) rows.back().push_back(fmt::format("{:.2f}", value));
  }
  page.add_table(header, rows);

  std::vector<double> ttft, tpot, itl;
  ChartSeries by_len{"requests", {}, true};
  for (const ServeRequestRecord& r : records) {
    if (!r.success) continue;
    ttft.push_back(r.ttft_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) * 1e3 / (r.output_tokens - 1));
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    by_len.points.emplace_back(double(r.prompt_len), r.ttft_s * 1e3);
  }
  page.add_svg(svg_line_chart(
      {"latency CDFs",
       "ms",
       "fraction",
       {{"TTFT", cdf_points(ttft), false}, {"TPOT", cdf_points(tpot), false}, {"ITL", cdf_points(itl), false}}}));
  page.add_svg(svg_line_chart({"TTFT against prompt length", "prompt tokens", "TTFT (ms)", {by_len}}));
  ChartSeries conc{"windows", throughput_by_concurrency(records, m.duration_s, 20), true};
  page.add_svg(svg_line_chart({"output throughput against concurrency (20 windows of the run)",
                               "requests in flight (mean over the window)",
                               "output tokens/s",
                               {conc}}));
  return page;
}

}  // namespace pagoda::bench
