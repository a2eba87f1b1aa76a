// ablation_plan: the rows of `pagoda bench ablation`: a baseline with every optimization off, then each one
// switched on in turn, cumulative (a row keeps every switch of the rows above it), and the arithmetic that
// compares a row's figures with the baseline's. Pure values: no model, no engine, no clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/serving_baseline.h"
#include "kv/kv_cache_view.h"
#include "model/model_options.h"

namespace pagoda::bench {

enum class AblationWeights : uint8_t { kF32, kQ8_0, kQ4_0 };
std::string_view ablation_weights_name(AblationWeights weights);  // "f32" | "q8_0" | "q4_0"

// Every switch the ablation flips, as the model and engine spell them.
struct AblationSettings {
  AblationWeights weights = AblationWeights::kF32;
  bool fusion = false;
  AttentionKind attention = AttentionKind::kNaive;
  KvLayout kv_layout = KvLayout::kContiguous;
  KvDType kv_dtype = KvDType::kF32;
  bool prefix_cache = false;
  BatchingMode batching = BatchingMode::kStatic;
  bool chunked_prefill = false;
};

struct AblationRow {
  std::string name;  // short, for the table: "baseline", "+fusion", ...
  std::string what;  // the switch this row turns on, in the model's or engine's words
  AblationSettings settings;
};

// Baseline (F32 weights, no fusion, naive attention, contiguous KV, static batching, whole-prompt prefill, no
// prefix cache), then +fusion, +Q8_0 weights, +Q4_0 weights, +flash attention, +paged KV, +INT8 KV, +prefix
// cache, +continuous batching, +chunked prefill: 10 rows, each differing from the one above in one switch.
std::vector<AblationRow> ablation_plan();

// What one row measured.
struct AblationFigures {
  double ttft_mean_ms = 0.0;
  double ttft_p99_ms = 0.0;
  double tpot_mean_ms = 0.0;
  double tpot_p99_ms = 0.0;
  double output_tok_s = 0.0;
  int32_t max_concurrent_seqs = 0;  // at the fixed KV budget (kv_capacity.h)
};

// Each figure over the baseline's (value / baseline: below 1 is better for latencies, above 1 for throughput
// and sequences); 0 where the baseline's figure is 0, which has no ratio.
struct AblationRatios {
  double ttft_mean = 0.0;
  double ttft_p99 = 0.0;
  double tpot_mean = 0.0;
  double tpot_p99 = 0.0;
  double output_tok_s = 0.0;
  double max_concurrent_seqs = 0.0;
};
AblationRatios ratio_to_baseline(const AblationFigures& row, const AblationFigures& baseline);

}  // namespace pagoda::bench
