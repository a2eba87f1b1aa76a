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
  // With chunked prefill, while any sequence is decoding, a step computes at most this many prompt tokens
  // (0: up to the step budget). On a CPU a step's time grows with its tokens, so this bounds how much an
  // arriving prompt stretches the running streams' inter-token latency, at the cost of that prompt's TTFT.
  int32_t max_prefill_tokens_with_decodes = 0;
  BatchingMode batching = BatchingMode::kContinuous;
};

}  // namespace pagoda
