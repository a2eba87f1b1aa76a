// SchedulePlan: what one engine step computes, as the Scheduler decided it: for each chosen sequence, how many
// of its uncomputed tokens (from first_pos on) and whether the step ends with a token sampled for it. A plain
// value, rebuilt every step.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda {

struct Sequence;

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int32_t first_pos = 0;       // position of the first token computed this step
  int32_t num_new_tokens = 0;  // >= 1
  bool samples = false;        // the chunk reaches the sequence's last token, so its logits give the next one
  // Speculative decoding: the chunk is the last token then this many drafts (Sequence::draft_tokens), and every
  // one of its positions gives a logits row: row j verifies draft j, the last one gives the token after them.
  int32_t num_draft_tokens = 0;
  // A prefill-only sequence's chunk reaches its prompt's end (it never samples): the step completes what it asked
  // of its prompt (a pooled vector, prompt logits) and it finishes.
  bool completes_prefill = false;
};

struct SchedulePlan {
  std::vector<ScheduledSeq> seqs;          // running sequences first, then the ones admitted this step
  std::vector<Sequence*> preempted;        // gave their blocks back this step and went back to waiting
  int32_t num_batched_tokens = 0;          // sum of num_new_tokens
  int32_t num_prefill_tokens = 0;          // of those, prompt positions (a recompute after preemption counts again)
  int32_t num_admitted_prompt_tokens = 0;  // prompts of the sequences scheduled for the first time
  int32_t num_draft_tokens = 0;            // of num_batched_tokens, drafts to verify
  // The prompt tokens the step could take while sequences decoded (prefill_budget.h), or -1: nobody decoded, so
  // prompts had the whole step budget.
  int32_t prefill_budget = -1;

  bool empty() const { return seqs.empty(); }
};

}  // namespace pagoda
