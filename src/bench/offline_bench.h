// run_offline_bench: N requests through the Engine at once (vLLM's benchmark_throughput): random prompts of
// the given lengths (or the lines of a dataset file), outputs of the given lengths (EOS ignored, so lengths
// are exact), and the figures: requests/s, input/output tokens/s, latency percentiles, and how full the
// engine got (peak running sequences, KV usage, wasted slots, preemptions, prefix-cache hits). The naive-server
// baselines (static batches, contiguous KV) run as serving_baseline.h simulates them.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>

#include "bench/latency_summary.h"
#include "bench/length_range.h"
#include "bench/serving_baseline.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct OfflineOptions {
  int32_t num_prompts = 64;
  LengthRange input_len{128, 128};
  LengthRange output_len{128, 128};
  std::string dataset;  // text file: one prompt per non-empty line (input_len is then ignored)
  uint64_t seed = 1;
  double temperature = 0.0;
  BatchingMode batching = BatchingMode::kContinuous;  // the static modes are client-side batches (request_driver.h)
  // Set when the engine runs as the contiguous layout (apply_kv_layout): KV usage and wasted slots are then
  // counted over the blocks each running sequence would reserve.
  std::optional<ContiguousReservation> contiguous;
};

struct OfflineReport {
  int32_t num_requests = 0;
  double duration_s = 0.0;
  int64_t num_input_tokens = 0;
  int64_t num_output_tokens = 0;
  double requests_per_s = 0.0;
  double input_tok_s = 0.0;
  double output_tok_s = 0.0;
  double total_tok_s = 0.0;
  LatencySummary ttft_ms, tpot_ms, itl_ms, e2e_ms, queue_ms;
  int32_t peak_running = 0;
  double peak_kv_usage = 0.0;
  double mean_wasted_slot_fraction = 0.0;  // wasted / allocated slots, averaged over samples with a sequence running
  int64_t num_preemptions = 0;
  int64_t num_padding_tokens = 0;  // rows static batching computed for members that had ended
  int64_t num_prefix_hit_tokens = 0;
  int64_t num_prefix_query_tokens = 0;
};

Result<OfflineReport> run_offline_bench(Engine& engine, const Tokenizer& tokenizer, const OfflineOptions& options);
std::string offline_report_json(const OfflineReport& report);
std::string offline_report_text(const OfflineReport& report);

}  // namespace pagoda::bench
