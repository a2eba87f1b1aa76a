// What `pagoda tune` measures before its sweep and writes after it: the machine and model estimates (read bandwidth,
// f32 matmul rate, KV bytes per token, weight bytes per decode step) and the chosen configuration file with the
// quantized model copy it points at. The sweep itself is tune_sweep.h; the choice and hints tune_plan.h.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>

#include "bench/ablation_models.h"
#include "bench/tune_plan.h"

namespace pagoda::bench {

struct MeasuredEstimates {
  TuneEstimates estimates;
  int32_t num_threads = 0;  // the threads the measurements ran on
};
// Measures this machine on `num_threads` threads (0 = one per core) over arrays of `membw_array_mib` MiB, and reads
// the shapes of `files`' three weight types.
Result<MeasuredEstimates> measure_tune_estimates(const AblationModelFiles& files, int32_t num_threads,
                                                 int64_t membw_array_mib);

// Writes tuned_config(best ...) to `config_path` as JSON. For a quantized choice the copy the sweep ran is kept next to
// it (CONFIG-q4_0.gguf) and the config's `model` points there, so `--config CONFIG.json` runs what was measured;
// for f32, `model_path` (the model tuned). Returns the model path written.
Result<std::string> write_tuned_config(const TuneCandidate& best, const AblationModelFiles& files,
                                       const std::string& model_path, const std::string& config_path,
                                       int32_t max_seq_len, int32_t kv_blocks, const TuneSlo& slo);

}  // namespace pagoda::bench
