// Iteration-level scheduling: running first, preemption on block shortage, then admission with prefix hits.
#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv) : config_(config), kv_(kv) {
  PAGODA_CHECK(config.max_num_seqs >= 1 && config.max_batched_tokens >= 1);
  running_.reserve(size_t(config.max_num_seqs));
}

void Scheduler::insert_waiting(Sequence* seq, bool at_front_of_its_priority) {
  // Lower priority value first; within a priority, preempted sequences go before new ones, new ones in order.
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const Sequence* other) {
    if (other->priority != seq->priority) return other->priority > seq->priority;
    return at_front_of_its_priority || other->arrival_idx > seq->arrival_idx;
  });
  waiting_.insert(it, seq);
}

void Scheduler::add(Sequence* seq) {
  PAGODA_CHECK(seq->kv.empty() && seq->status == SeqStatus::kWaiting);
  insert_waiting(seq, false);
}

bool Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) {
    waiting_.erase(it);
  } else if (auto rit = std::find(running_.begin(), running_.end(), seq); rit != running_.end()) {
    running_.erase(rit);
  } else {
    return false;
  }
  kv_.free(seq->kv);
  seq->status = SeqStatus::kFinished;
  return true;
}

void Scheduler::release(Sequence* seq) {
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  kv_.free(seq->kv);
  seq->status = SeqStatus::kFinished;
}

void Scheduler::finish(Sequence* seq) {
  PAGODA_CHECK(std::find(running_.begin(), running_.end(), seq) != running_.end(),
               "finish() of a sequence that is not running");
  release(seq);
}

Sequence* Scheduler::pick_victim(size_t first_idx) const {
  Sequence* victim = nullptr;
  for (size_t j = first_idx; j < running_.size(); ++j) {
    Sequence* s = running_[j];
    if (victim == nullptr || s->priority > victim->priority ||
        (s->priority == victim->priority && s->arrival_idx > victim->arrival_idx))
      victim = s;
  }
  return victim;
}

void Scheduler::preempt(Sequence* seq, SchedulePlan& plan) {
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  // Recompute later: prompt and output so far become the tokens to prefill; nothing streamed is repeated.
  kv_.free(seq->kv);
  seq->status = SeqStatus::kWaiting;
  ++seq->timing.num_preemptions;
  ++num_preemptions_;
  insert_waiting(seq, true);
  plan.preempted.push_back(seq);
}

SchedulePlan Scheduler::schedule() {
  SchedulePlan plan;
  int32_t budget = config_.max_batched_tokens;
  // Without chunked prefill a prompt is computed whole, so one prompt larger than the budget may join a step
  // (with the decodes, as vLLM does) as long as it is the step's only prefill; otherwise it would wait for
  // every running stream to end.
  bool prefill_in_plan = false;
  const bool chunked = config_.chunked_prefill;
  // Decode-paced prefill: prompt tokens this step may still take (a cap only while someone is decoding).
  int32_t prefill_budget = config_.max_batched_tokens;
  const int32_t num_decoding = int32_t(std::count_if(running_.begin(), running_.end(), [](const Sequence* s) {
    return s->num_uncomputed_tokens() == 1;
  }));
  if (chunked && num_decoding > 0) {
    if (config_.max_prefill_tokens_with_decodes == kAutoPrefillCap)
      prefill_budget = std::max(num_decoding, kMinPrefillTokensWithDecodes);
    else if (config_.max_prefill_tokens_with_decodes > 0)
      prefill_budget = config_.max_prefill_tokens_with_decodes;
  }

  // 1. Running sequences, oldest first. Victims come only from those not yet in the plan (the sequence being
  // scheduled included), so nothing in the plan is ever taken back.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* seq = running_[i];
    const int32_t remaining = seq->num_uncomputed_tokens();
    PAGODA_CHECK(remaining >= 1, "running sequence {} has nothing to compute", seq->request_id);
    const int32_t n = chunked ? std::min({remaining, budget, remaining > 1 ? prefill_budget : 1}) : remaining;
    if (n == 0) {  // a prompt still prefilling, but this step's prompt tokens are spent
      ++i;
      continue;
    }
    if (!chunked && n > budget && prefill_in_plan) break;
    const int32_t first_pos = seq->kv.num_computed_tokens;
    bool allocated = kv_.allocate_slots(seq->kv, n);
    bool preempted_self = false;
    while (!allocated) {
      Sequence* victim = pick_victim(i);
      if (victim == seq) {
        // Only sequences already in this step's plan hold the rest: this one waits for them.
        preempt(seq, plan);
        preempted_self = true;
        break;
      }
      preempt(victim, plan);
      allocated = kv_.allocate_slots(seq->kv, n);
    }
    if (preempted_self) continue;  // running_[i] is now the next sequence
    plan.seqs.push_back(ScheduledSeq{seq, first_pos, n, first_pos + n == seq->num_tokens()});
    plan.num_batched_tokens += n;
    budget -= n;
    if (remaining > 1) prefill_budget -= n;
    prefill_in_plan = prefill_in_plan || remaining > 1;
    ++i;
  }

  // 2. Admission. After a preemption nobody new comes in this step, so the freed blocks go to the preempted ones
  // first.
  const bool may_admit = plan.preempted.empty();
  while (may_admit && !waiting_.empty() &&
         (chunked ? std::min(budget, prefill_budget) > 0 : (budget > 0 || !prefill_in_plan)) &&
         int32_t(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_.front();
    const PrefixHit hit = kv_.lookup_prefix(seq->tokens);
    const int32_t remaining = seq->num_tokens() - hit.num_cached_tokens;
    const int32_t n = chunked ? std::min({remaining, budget, remaining > 1 ? prefill_budget : budget}) : remaining;
    if (!chunked && n > budget && prefill_in_plan) break;
    const bool first_admission = seq->timing.first_scheduled_us < 0 && seq->timing.num_preemptions == 0;
    if (!kv_.allocate_slots(seq->kv, n, hit)) break;  // wait for blocks to come back
    if (first_admission) seq->num_cached_tokens = hit.num_cached_tokens;
    waiting_.pop_front();
    seq->status = SeqStatus::kRunning;
    running_.push_back(seq);
    const int32_t first_pos = seq->kv.num_computed_tokens - n;
    plan.seqs.push_back(ScheduledSeq{seq, first_pos, n, first_pos + n == seq->num_tokens()});
    plan.num_batched_tokens += n;
    budget -= n;
    prefill_budget -= n;
    prefill_in_plan = true;
  }
  return plan;
}

void Scheduler::on_step_done(const SchedulePlan& plan) {
  for (const ScheduledSeq& s : plan.seqs)
    if (s.seq->status == SeqStatus::kRunning) kv_.cache_full_blocks(s.seq->kv, s.seq->tokens);
}

}  // namespace pagoda
