// SchedulerConfig: the knobs of iteration-level scheduling. A plain value, checked by the Engine.
#pragma once

#include <cstdint>

namespace pagoda {

enum class BatchingMode : uint8_t {
  kContinuous,  // sequences join and leave at every step
  kStatic,      // a batch is formed, runs until its longest member ends, then the next one forms
};

struct SchedulerConfig {
  int32_t max_num_seqs = 256;        // sequences in one step (batch_size)
  int32_t max_batched_tokens = 256;  // tokens in one step, decode and prefill together
  bool chunked_prefill = true;       // false: a prompt is computed in one step, whatever its length
  BatchingMode batching = BatchingMode::kContinuous;
};

}  // namespace pagoda
