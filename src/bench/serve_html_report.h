// serve_html_report: the --report page of `pagoda bench serve`: the run and its figures as a table, CDFs of TTFT,
// TPOT and ITL, TTFT against prompt length (one dot per request), and output throughput against concurrency (the
// run cut into windows: requests in flight in a window against the tokens it received per second). Formatting
// only, from the records the client kept.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "bench/html_report.h"
#include "bench/serve_metrics.h"
#include "bench/serve_report.h"

namespace pagoda::bench {

// (mean requests in flight, output tokens/s) for each of `num_windows` equal windows of [0, duration_s]; a
// successful request is in flight from its send to its last token, and its tokens arrive at the first-token
// time and then after each inter-token gap.
std::vector<std::pair<double, double>> throughput_by_concurrency(std::span<const ServeRequestRecord> records,
                                                                 double duration_s, int32_t num_windows);

HtmlReport serve_html_report(const ServeRunInfo& info, const ServeMetrics& metrics,
                             std::span<const ServeRequestRecord> records);

}  // namespace pagoda::bench
