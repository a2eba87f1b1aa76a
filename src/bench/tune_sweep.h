// run_tune_sweep: the short sweep of `pagoda tune`, one knob at a time (coordinate descent, so it stays a
// handful of runs): weight quantization, then KV precision, KV block size, max batched tokens and batch size, each
// stage keeping the best value so far by the scenario's objective under the SLOs (tune_plan.h). Every trial is
// the ablation's workload through a fresh Engine with every optimization on (paged KV, prefix cache,
// continuous batching, chunked prefill, fusion, flash attention).
#pragma once

#include <pagoda/status.h>

#include <functional>
#include <vector>

#include "bench/ablation_bench.h"
#include "bench/ablation_models.h"
#include "bench/tune_plan.h"

namespace pagoda::bench {

struct TuneSweepOptions {
  AblationWorkload workload;
  TuneSlo slo;
  int32_t max_seq_len = 2048;
  int32_t kv_budget_f32_tokens = 8192;  // the pool of every trial: the bytes of this many f32 KV tokens
  int32_t num_threads = 0;
  TuneCandidate start;  // the values before each knob's stage
  std::vector<AblationWeights> weights{AblationWeights::kF32, AblationWeights::kQ8_0, AblationWeights::kQ4_0};
  std::vector<KvDType> kv_dtypes{KvDType::kF32, KvDType::kInt8};
  std::vector<int32_t> block_sizes{16, 32};
  std::vector<int32_t> max_batched_tokens{64, 128, 256};
  std::vector<int32_t> batch_sizes{4, 8, 16};
};

struct TuneSweep {
  std::vector<TuneTrial> trials;  // in the order run
  TuneChoice choice;              // into trials
  int32_t kv_blocks = 0;          // the winner's pool: blocks of its block size and precision
};

Result<TuneSweep> run_tune_sweep(const AblationModelFiles& files, const TuneSweepOptions& options,
                                 const std::function<void(const TuneTrial&)>& on_trial);

}  // namespace pagoda::bench
