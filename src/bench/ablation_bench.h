// run_ablation_workload: the workload every row of `pagoda bench ablation` runs through the in-process Engine,
// and the engine config a row's switches make. Online: requests arrive as a Poisson process at a fixed rate and
// stream (TTFT and TPOT as the engine timed them); offline: all at once, for throughput. Every request's prompt
// starts with the same shared prefix (so the prefix cache has something to find) followed by its own random
// tokens; outputs are exact lengths (EOS ignored, greedy). The prompts are the same for every row (fixed seed).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/ablation_plan.h"
#include "engine/engine.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

enum class AblationScenario : uint8_t { kOnline, kOffline };

struct AblationWorkload {
  AblationScenario scenario = AblationScenario::kOnline;
  int32_t num_requests = 8;
  double request_rate = 1.0;  // online: requests per second
  int32_t prompt_len = 64;    // tokens, BOS and the shared prefix included
  int32_t shared_prefix_len = 32;
  int32_t output_len = 16;
  uint64_t seed = 1;
};

// Errors name the flag: too few requests or tokens, a shared prefix not shorter than the prompt, a bad rate.
Status validate_ablation_workload(const AblationWorkload& workload);

// What every row shares: the context, the KV budget (the bytes of this many tokens of f32 KV; the pool gets as
// many blocks of the row's precision as fit in them), the step budget, the batch size and the threads.
struct AblationEngineBase {
  int32_t max_seq_len = 512;
  int32_t block_size = 16;
  int32_t kv_budget_f32_tokens = 2048;
  int32_t max_batched_tokens = 128;  // with chunked prefill; without, at least max_seq_len
  int32_t max_num_seqs = 8;
  int32_t num_threads = 0;
};

int64_t kv_budget_bytes(const AblationEngineBase& base, const ModelConfig& model);
// Errors: a contiguous row whose budget cannot reserve one sequence of max_seq_len.
Result<EngineConfig> ablation_engine_config(const AblationSettings& settings, const AblationEngineBase& base,
                                            const ModelConfig& model);
// The KV capacity column for a row: sequences of the workload its pool holds at once.
int32_t ablation_max_concurrent_seqs(const AblationSettings& settings, const AblationEngineBase& base,
                                     const ModelConfig& model, const AblationWorkload& workload);

struct AblationMeasurement {
  AblationFigures figures;      // max_concurrent_seqs left 0: the caller fills it from the plan
  std::vector<double> ttft_ms;  // per request, in submission order
  std::vector<double> tpot_ms;  // per request with two tokens or more
  double duration_s = 0.0;
  int64_t num_output_tokens = 0;
  int32_t peak_running = 0;  // the most sequences one step ran
  int64_t num_prefix_hit_tokens = 0;
  int64_t num_preemptions = 0;
};

// One short warm-up request first (not counted), then the workload, batched as `batching` says (the static
// modes as client-side batches, request_driver.h). Errors: a refused request.
Result<AblationMeasurement> run_ablation_workload(Engine& engine, const Tokenizer& tokenizer,
                                                  const AblationWorkload& workload, BatchingMode batching);

struct AblationRowResult {
  AblationRow row;
  std::string weights_type;  // what the row's file really holds ("f32", "q8_0", "q4_0")
  AblationMeasurement measured;
  AblationRatios ratios;  // against the first row
  int32_t num_kv_blocks = 0;
};

class AblationModelFiles;
// Every row of `rows` in turn: load its weights with its model switches, build an Engine with its engine
// switches, run the workload `num_repeats` times (each on a fresh Engine; the repetition with the most output
// tokens/s counts), destroy both. `on_row` (may be empty) is told after each row, for progress.
Result<std::vector<AblationRowResult>> run_ablation(const std::vector<AblationRow>& rows,
                                                    const AblationModelFiles& files, const AblationEngineBase& base,
                                                    const AblationWorkload& workload, int32_t num_repeats,
                                                    const std::function<void(const AblationRowResult&)>& on_row);

}  // namespace pagoda::bench
