// RequestTiming: the moments in one request's life, as the engine saw them (steady clock, microseconds since
// the engine started). TTFT, TPOT, inter-token latency, queue time and E2E latency are derived from these.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda {

struct RequestTiming {
  int64_t arrival_us = 0;           // submit() returned
  int64_t first_scheduled_us = -1;  // the first step that computed any of its tokens began
  int64_t first_token_us = -1;      // its first output token was sampled
  int64_t finish_us = -1;           // it finished (or was cancelled)
  std::vector<int64_t> token_us;    // [num output tokens] when each was sampled
  int32_t num_preemptions = 0;

  double queue_time_s() const { return first_scheduled_us < 0 ? 0.0 : (first_scheduled_us - arrival_us) * 1e-6; }
  double ttft_s() const { return first_token_us < 0 ? 0.0 : (first_token_us - arrival_us) * 1e-6; }
  double e2e_s() const { return finish_us < 0 ? 0.0 : (finish_us - arrival_us) * 1e-6; }
  double prefill_s() const {  // scheduled to first token
    return first_token_us < 0 || first_scheduled_us < 0 ? 0.0 : (first_token_us - first_scheduled_us) * 1e-6;
  }
  double decode_s() const {  // first token to finish
    return finish_us < 0 || first_token_us < 0 ? 0.0 : (finish_us - first_token_us) * 1e-6;
  }
  // Mean time per output token after the first; 0 with fewer than two tokens.
  double tpot_s() const {
    return token_us.size() < 2 ? 0.0 : (token_us.back() - token_us.front()) * 1e-6 / double(token_us.size() - 1);
  }
};

}  // namespace pagoda
