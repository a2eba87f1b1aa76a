// The serving benchmark's figures from its per-request records.
#include "bench/serve_metrics.h"

namespace pagoda::bench {

ServeMetrics compute_serve_metrics(std::span<const ServeRequestRecord> records, double duration_s,
                                   std::span<const double> percents) {
  ServeMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  for (const ServeRequestRecord& r : records) {
    if (!r.success) {
      ++m.num_failed;
      continue;
    }
    ++m.num_completed;
    m.total_input_tokens += r.prompt_len;
    m.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    e2el.push_back(r.e2e_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) * 1e3 / double(r.output_tokens - 1));
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
  }
  if (duration_s > 0) {
    m.request_throughput = m.num_completed / duration_s;
    m.output_throughput = double(m.total_output_tokens) / duration_s;
    m.total_token_throughput = double(m.total_input_tokens + m.total_output_tokens) / duration_s;
  }
  m.ttft_ms = LatencyStats::of(std::move(ttft), percents);
  m.tpot_ms = LatencyStats::of(std::move(tpot), percents);
  m.itl_ms = LatencyStats::of(std::move(itl), percents);
  m.e2el_ms = LatencyStats::of(std::move(e2el), percents);
  return m;
}

}  // namespace pagoda::bench
