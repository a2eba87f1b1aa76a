// GenerateRequest: what a caller submits to the Engine: prompt token ids, how to sample, when to stop. A plain
// value; the engine validates it on submit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "sampling/sampling_params.h"

namespace pagoda {

using RequestId = int64_t;

struct GenerateRequest {
  std::vector<TokenId> prompt;  // token ids, BOS included when the model wants one
  SamplingParams sampling;
  int32_t priority = 0;  // lower runs first (vLLM's convention); ties go first come, first served
};

}  // namespace pagoda
