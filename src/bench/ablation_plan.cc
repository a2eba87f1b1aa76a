// The ablation's cumulative row plan and its ratios.
#include "bench/ablation_plan.h"

namespace pagoda::bench {

std::string_view ablation_weights_name(AblationWeights weights) {
  switch (weights) {
    case AblationWeights::kF32: return "f32";
    case AblationWeights::kQ8_0: return "q8_0";
    case AblationWeights::kQ4_0: return "q4_0";
  }
  return "?";
}

std::vector<AblationRow> ablation_plan() {
  std::vector<AblationRow> rows;
  AblationSettings s;  // the defaults are the baseline
  rows.push_back({"baseline", "f32 weights, no fusion, naive attention, contiguous KV, static batching", s});
  s.fusion = true;
  rows.push_back({"+fusion", "fused norm/QKV/SiLU/RoPE/residual jobs (--no-fusion off)", s});
  s.weights = AblationWeights::kQ8_0;
  rows.push_back({"+q8_0", "Q8_0 weights", s});
  s.weights = AblationWeights::kQ4_0;
  rows.push_back({"+q4_0", "Q4_0 (INT4) weights", s});
  s.attention = AttentionKind::kFlash;
  rows.push_back({"+flash", "flash-style attention (--attention flash)", s});
  s.kv_layout = KvLayout::kPaged;
  rows.push_back({"+paged", "paged KV, blocks on demand (--kv-layout paged)", s});
  s.kv_dtype = KvDType::kInt8;
  rows.push_back({"+int8kv", "INT8 KV cache (--kv-cache-dtype int8)", s});
  s.prefix_cache = true;
  rows.push_back({"+prefix", "prefix cache (no --no-prefix-cache)", s});
  s.batching = BatchingMode::kContinuous;
  rows.push_back({"+contbatch", "continuous batching (--batching continuous)", s});
  s.chunked_prefill = true;
  rows.push_back({"+chunked", "chunked prefill (no --no-chunked-prefill)", s});
  return rows;
}

namespace {

double ratio(double value, double baseline) { return baseline != 0.0 ? value / baseline : 0.0; }

}  // namespace

AblationRatios ratio_to_baseline(const AblationFigures& row, const AblationFigures& baseline) {
  AblationRatios r;
  r.ttft_mean = ratio(row.ttft_mean_ms, baseline.ttft_mean_ms);
  r.ttft_p99 = ratio(row.ttft_p99_ms, baseline.ttft_p99_ms);
  r.tpot_mean = ratio(row.tpot_mean_ms, baseline.tpot_mean_ms);
  r.tpot_p99 = ratio(row.tpot_p99_ms, baseline.tpot_p99_ms);
  r.output_tok_s = ratio(row.output_tok_s, baseline.output_tok_s);
  r.max_concurrent_seqs = ratio(row.max_concurrent_seqs, baseline.max_concurrent_seqs);
  return r;
}

}  // namespace pagoda::bench
