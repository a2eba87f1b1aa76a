// SchedulerConfig: the knobs of iteration-level scheduling. A plain value, checked by the Engine.
#pragma once

#include <cstdint>

namespace pagoda {

// max_prefill_tokens_with_decodes = kAutoPrefillCap: the prompt tokens a step may take while sequences decode come
// from engine/prefill_budget.h's policy (a time target for the step, from a step-cost model fitted online). Until
// that model is fitted: while d sequences decode, at most max(d, kMinPrefillTokensWithDecodes) prompt tokens (a
// mixed step then costs at most about twice a decode-only one). The floor keeps a lone stream's step
// compute-bound instead of crawling through a prompt a token or two at a time; the policy keeps it too.
inline constexpr int32_t kAutoPrefillCap = -1;
inline constexpr int32_t kMinPrefillTokensWithDecodes = 4;

struct SchedulerConfig {
  int32_t max_num_seqs = 256;        // sequences in one step (batch_size)
  int32_t max_batched_tokens = 256;  // tokens in one step, decode and prefill together
  bool chunked_prefill = true;       // false: a prompt is computed in one step, whatever its length
  // With chunked prefill, while any sequence is decoding, a step computes at most this many prompt tokens
  // (kAutoPrefillCap: paced by the decodes, see above; 0: up to the step budget). On a CPU a step's time grows
  // with its tokens, so this bounds how much an arriving prompt stretches the running streams' inter-token
  // latency, at the cost of that prompt's TTFT.
  int32_t max_prefill_tokens_with_decodes = kAutoPrefillCap;
  // Latency targets of the automatic prefill budget (engine/prefill_budget.h), in milliseconds; 0 = none (TPOT:
  // a step with prompt tokens may take kDefaultStepSlowdown times a decode-only one).
  double tpot_slo_ms = 0.0;
  double ttft_slo_ms = 0.0;
  // Speculative decoding (with a drafter given to the Scheduler): drafts a decoding sequence may verify per step
  // at most. They take the step's token budget after the decodes and prompt chunks scheduled before them, and
  // are dropped, never preempting anyone, when the pool has no blocks for them.
  int32_t num_speculative_tokens = 0;
  // Adaptive draft length: each step a sequence verifies the number of drafts (up to num_speculative_tokens)
  // that maximizes its expected tokens per unit of step cost (spec/draft_length.h), from the drafter's chance for
  // each draft where it gives one (n-gram table drafts), else its own acceptance rate, and the step cost measured
  // online (Scheduler::record_step). False: every draft the drafter has.
  bool adaptive_num_speculative_tokens = false;
  // An encoder's prompts (ModelConfig::encoder, set by the Engine): each is computed whole in one step, never
  // chunked and never from the prefix cache, since every row's state depends on every other token of its prompt.
  bool whole_prompts = false;
};

}  // namespace pagoda
