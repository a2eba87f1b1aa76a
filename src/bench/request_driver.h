// drive_requests: a benchmark's client side: submits a workload to an Engine as its requests arrive and records
// what each client saw, under one of the batching modes of serving_baseline.h. Continuous hands every request to
// the engine when it arrives. The static modes form request-level batches here, on the client side, as a server
// without iteration-level scheduling would: the requests that have arrived when a batch begins (at most the
// engine's batch_size) are submitted together and the next batch waits until all of them are answered.
// Fixed-shape batches (kStatic) keep a member that ended computing until the batch's longest one ends: each member
// is submitted to run to the end of its context, answered when its own max_tokens are out (its figures stop
// there), and the rows it computes after that are padding; once every member has its answer the rest are
// cancelled, which lands at the engine's next step boundary (at most one step later than a fixed-shape batch
// would end). Every request must
// have an exact length (SamplingParams::ignore_eos): a fixed-shape batch's padding needs to know where each
// member ends. Owns nothing past the call.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <vector>

#include "bench/serving_baseline.h"
#include "engine/engine.h"

namespace pagoda::bench {

struct DrivenRequest {
  GenerateRequest request;
  double arrival_s = 0.0;  // after the start of the run
};

// What the client saw of one request.
struct DrivenResult {
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;
  int32_t num_output_tokens = 0;  // its own: padding rows are not output
  // On the engine's clock: arrival_us is when the request reached the client (a static batch may make it wait
  // there before the engine sees it); token_us holds its own tokens; finish_us is when its answer was complete.
  RequestTiming timing;
};

struct DriveReport {
  std::vector<DrivenResult> results;  // in the order of the requests
  int64_t num_padding_tokens = 0;     // kStatic: rows computed for members after their own end
  double duration_s = 0.0;            // from the start to the last answer
};

// Errors: a request the engine refused, or one without ignore_eos in a static mode.
Result<DriveReport> drive_requests(Engine& engine, std::vector<DrivenRequest> requests, BatchingMode mode);

}  // namespace pagoda::bench
