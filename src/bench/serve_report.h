// The serving benchmark's output: the text block in vLLM's layout and names (so figures compare one to one
// with `vllm bench serve`), and the JSON result with the same figures plus every request's record.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "bench/serve_metrics.h"

namespace pagoda::bench {

// What was run, echoed in both outputs.
struct ServeRunInfo {
  std::string base_url;
  std::string endpoint;
  std::string model;    // "" when no --model was given
  std::string dataset;  // "random", "sharegpt:FILE" or the JSONL path
  int32_t num_prompts = 0;
  double request_rate = 0;  // inf: all at once
  double burstiness = 1;
  int32_t max_concurrency = 0;  // 0: unlimited
};

// "Mean TTFT (ms):" etc.; a percentile's label is "P99" or "P99.9" as vLLM writes it.
std::string format_serve_report(const ServeRunInfo& info, const ServeMetrics& m);
std::string serve_report_json(const ServeRunInfo& info, const ServeMetrics& m,
                              std::span<const ServeRequestRecord> records);

}  // namespace pagoda::bench
