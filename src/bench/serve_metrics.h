// ServeRequestRecord and ServeMetrics: what one streamed request of a serving benchmark measured, and the
// run's figures in vLLM's definitions (benchmark_serving.py): TTFT to the first content chunk, TPOT =
// (E2E - TTFT) / (output tokens - 1) per request, ITL = every gap between content chunks, throughput over the
// whole run's duration, totals over successful requests only. Plain values and a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/linear_percentile.h"

namespace pagoda::bench {

struct ServeRequestRecord {
  bool success = false;
  std::string error;          // why not, when !success
  double send_offset_s = 0;   // when it was sent, from the start of the run
  int32_t prompt_len = 0;     // tokens: the server's usage.prompt_tokens, else the client's count
  int32_t output_tokens = 0;  // usage.completion_tokens, else the number of content chunks
  double ttft_s = 0;
  double e2e_s = 0;           // send to the last content chunk
  std::vector<double> itl_s;  // gaps between consecutive content chunks
};

struct ServeMetrics {
  int32_t num_completed = 0;
  int32_t num_failed = 0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double duration_s = 0;
  double request_throughput = 0;      // completed requests / s
  double output_throughput = 0;       // generated tokens / s
  double total_token_throughput = 0;  // (input + generated) tokens / s
  LatencyStats ttft_ms, tpot_ms, itl_ms, e2el_ms;
};

ServeMetrics compute_serve_metrics(std::span<const ServeRequestRecord> records, double duration_s,
                                   std::span<const double> percents);

}  // namespace pagoda::bench
