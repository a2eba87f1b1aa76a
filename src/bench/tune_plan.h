// tune_plan: the arithmetic and the decisions of `pagoda tune`, apart from any measurement: the estimates from
// the model's shapes and this machine's bandwidth (KV bytes per token, decode time per token = weight bytes read
// per token / bandwidth), which trial of the sweep wins under the SLOs, the troubleshooting hints the figures
// support, and the configuration file written for the winner. Pure values and functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/ablation_bench.h"
#include "core/config.h"
#include "kv/kv_cache_view.h"

namespace pagoda::bench {

struct TuneSlo {
  std::optional<double> ttft_p99_ms;
  std::optional<double> tpot_p99_ms;
};

// One point of the sweep: what the config file (and --max-batched-tokens) would say.
struct TuneCandidate {
  AblationWeights weights = AblationWeights::kQ4_0;
  KvDType kv_dtype = KvDType::kInt8;
  int32_t block_size = 16;
  int32_t max_batched_tokens = 128;
  int32_t batch_size = 8;
};
std::string describe_candidate(const TuneCandidate& candidate);  // "q4_0, int8 KV, block 16, 128 tokens, batch 8"

struct TuneTrial {
  std::string stage;  // which knob this trial varied: "quantization", "kv dtype", ...
  TuneCandidate candidate;
  AblationFigures figures;
  int32_t peak_running = 0;
};

bool meets_slo(const AblationFigures& figures, const TuneSlo& slo);

// The objective: online, the lowest TPOT p99 (then TTFT p99); offline, the most output tokens/s. Among the
// trials that meet the SLOs; when none does, the best by the objective alone, with met_slo false.
struct TuneChoice {
  size_t index = 0;
  bool met_slo = false;
};
TuneChoice choose_trial(std::span<const TuneTrial> trials, AblationScenario scenario, const TuneSlo& slo);

struct TuneEstimates {
  double membw_gbps = 0.0;              // read-only stream
  double matmul_gflops = 0.0;           // f32
  int64_t kv_bytes_per_token_f16 = 0;   // 2 x layers x KV heads x head dim x 2 (the planning formula)
  int64_t kv_bytes_per_token_f32 = 0;   // what the engine stores: f32
  int64_t kv_bytes_per_token_int8 = 0;  // int8 values plus one f32 scale per token per KV head
  int64_t weight_bytes[3] = {0, 0, 0};  // read per decode step, by AblationWeights (f32, q8_0, q4_0)
};
// Weight bytes read once per token over the bandwidth, in ms; 0 without a bandwidth.
double decode_ms_per_token(int64_t weight_bytes, double membw_gbps);

// Lines of advice that the chosen trial's figures (and the sweep's) support; empty when nothing stands out.
std::vector<std::string> tune_hints(std::span<const TuneTrial> trials, const TuneChoice& choice,
                                    AblationScenario scenario, const TuneSlo& slo, const TuneEstimates& estimates);

// The configuration file for the winner: quantization, max_seq_len, batch_size, kv_cache {max_entries,
// block_size, dtype}, `model`, and the SLOs it was chosen for (slo, which the engine's prefill budget then paces).
PagodaConfig tuned_config(const TuneCandidate& candidate, const std::string& model_path, int32_t max_seq_len,
                          int32_t kv_max_entries, const TuneSlo& slo = {});

}  // namespace pagoda::bench
