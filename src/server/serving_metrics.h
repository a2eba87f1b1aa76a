// ServingMetrics: vLLM's serving metrics under the "pagoda:" prefix (same names, meanings and buckets, so a
// vLLM Grafana dashboard needs only the prefix changed): per-request latency histograms recorded when a request
// finishes, and at scrape time the engine's gauges and counters. Thread-safe.
#pragma once

#include <pagoda/request.h>

#include <atomic>
#include <string>

#include "engine/engine_stats.h"
#include "engine/request_timing.h"
#include "metrics/histogram.h"

namespace pagoda::server {

struct CacheConfigInfo {
  int32_t block_size = 0;
  std::string cache_dtype;   // "f16", or "K q8_0, V f16" where K and V differ (kv_types_name)
  bool enable_prefix_caching = true;
  int32_t num_gpu_blocks = 0;  // vLLM's label name; here: the KV pool's blocks in RAM
  std::string cache_type_k;    // "f16" | "f32" | "bf16" | "q8_0" | "q4_0" | "int8", as kv_cache.type_k spells them
  std::string cache_type_v;
  int64_t kv_bytes_per_token = 0;  // K and V of every layer for one token
};

class ServingMetrics {
 public:
  explicit ServingMetrics(std::string model_name);
  // One finished request (its timing and counts, as the engine recorded them).
  void record_finished(const RequestTiming& timing, FinishReason reason, int32_t num_prompt_tokens,
                       int32_t num_output_tokens);
  void record_http_request(int status);
  // The Prometheus text of everything, with the engine's current figures.
  // `num_preparing`: requests the server is parsing, templating or tokenizing (not yet in the engine).
  std::string render(const EngineStats& stats, const CacheConfigInfo& cache, int32_t num_preparing = 0) const;

 private:
  std::string model_name_;
  metrics::Histogram ttft_;
  metrics::Histogram itl_;
  metrics::Histogram tpot_;
  metrics::Histogram e2e_;
  metrics::Histogram queue_;
  metrics::Histogram prefill_;
  metrics::Histogram decode_;
  metrics::Histogram prompt_tokens_;
  metrics::Histogram generation_tokens_;
  std::atomic<int64_t> num_http_2xx_{0}, num_http_4xx_{0}, num_http_5xx_{0};
};

}  // namespace pagoda::server
