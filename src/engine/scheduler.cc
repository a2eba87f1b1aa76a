// Iteration-level scheduling: running first, preemption on block shortage, admission with prefix hits; and
// after each step, the one place that decides which sequences are finished.
#include "engine/scheduler.h"

#include "engine/prefill_budget.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"
#include "engine/prefill_budget.h"

namespace pagoda {
namespace {

// Why a constrained sequence cannot go on, for its client: its grammar's matcher overflowed (a grammar too
// ambiguous to follow), or the grammar allows no token the vocabulary has.
std::string grammar_end_error(const Sequence& seq) {
  if (seq.grammar && seq.grammar->overflowed())
    return fmt::format(
        "the output constraint cannot be followed: its grammar is too ambiguous (after {} output tokens, one step "
        "passed the grammar matcher's work bound); write it with fewer overlapping alternatives",
        seq.num_output_tokens());
  return fmt::format("the output constraint allows no token after {} output tokens: no token of the model's vocabulary "
                     "continues its grammar",
                     seq.num_output_tokens());
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv, std::vector<TokenId> eos_token_ids,
                     Drafter* drafter)
    : config_(config), kv_(kv), eos_token_ids_(std::move(eos_token_ids)), drafter_(drafter) {
  PAGODA_CHECK(config.max_num_seqs >= 1 && config.max_batched_tokens >= 1);
  std::sort(eos_token_ids_.begin(), eos_token_ids_.end());
  running_.reserve(size_t(config.max_num_seqs));
  plan_.seqs.reserve(size_t(config.max_num_seqs));
  plan_.preempted.reserve(size_t(config.max_num_seqs));
  events_.reserve(size_t(config.max_num_seqs));
}

Scheduler::~Scheduler() {
  for (auto& [id, seq] : sequences_) kv_.free(seq->kv);
}

bool Scheduler::ends_generation(TokenId token) const {
  return std::binary_search(eos_token_ids_.begin(), eos_token_ids_.end(), token);
}

void Scheduler::insert_waiting(Sequence* seq, bool at_front_of_its_priority) {
  // Lower priority value first; within a priority, preempted sequences go before new ones, new ones in order.
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const Sequence* other) {
    if (other->priority != seq->priority) return other->priority > seq->priority;
    return at_front_of_its_priority || other->arrival_idx > seq->arrival_idx;
  });
  waiting_.insert(it, seq);
}

Sequence* Scheduler::add(std::unique_ptr<Sequence> seq) {
  PAGODA_CHECK(seq->kv.empty() && seq->status == SeqStatus::kWaiting);
  Sequence* s = seq.get();
  const bool inserted = sequences_.emplace(s->request_id, std::move(seq)).second;
  PAGODA_CHECK(inserted, "request id {} is already held", s->request_id);
  insert_waiting(s, false);
  return s;
}

Sequence* Scheduler::add_group(std::unique_ptr<Sequence> parent, std::vector<std::unique_ptr<Sequence>> samples) {
  PAGODA_CHECK(!samples.empty() && parent->forks.empty(), "a fork group needs samples");
  PAGODA_CHECK(int32_t(samples.size()) <= config_.max_num_seqs, "{} samples, but a step holds {} sequences",
               samples.size(), config_.max_num_seqs);
  for (std::unique_ptr<Sequence>& s : samples) {
    PAGODA_CHECK(s->kv.empty() && s->status == SeqStatus::kWaiting && s->tokens == parent->tokens);
    s->status = SeqStatus::kAwaitingFork;
    s->fork_parent = parent.get();
    parent->forks.push_back(s.get());
    const RequestId id = s->request_id;
    const bool inserted = sequences_.emplace(id, std::move(s)).second;
    PAGODA_CHECK(inserted, "request id {} is already held", id);
  }
  return add(std::move(parent));
}

int32_t Scheduler::num_seats_taken() const {
  int32_t n = 0;
  for (const Sequence* s : running_) n += seats_of(*s);
  return n;
}

void Scheduler::fork(Sequence* parent) {
  auto at = std::find(running_.begin(), running_.end(), parent);
  PAGODA_CHECK(at != running_.end() && parent->num_uncomputed_tokens() == 0);
  for (Sequence* s : parent->forks) {
    kv_.fork(parent->kv, s->kv);
    s->status = SeqStatus::kRunning;
    s->fork_parent = nullptr;
    s->num_cached_tokens = parent->num_cached_tokens;
    s->timing.first_scheduled_us = parent->timing.first_scheduled_us;
    s->timing.num_preemptions = parent->timing.num_preemptions;
    if (s->prompt_rows_start() >= 0) {
      s->prompt_logits = parent->prompt_logits;
      s->prompt_token_logprobs = parent->prompt_token_logprobs;
      s->num_prompt_logits_rows = parent->num_prompt_logits_rows;
    }
  }
  at = running_.insert(running_.erase(at), parent->forks.begin(), parent->forks.end());
  parent->forks.clear();
  kv_.free(parent->kv);
  sequences_.erase(parent->request_id);  // destroys parent
}

void Scheduler::drop_parent(Sequence* parent) {
  PAGODA_CHECK(parent->forks.empty());
  if (parent->status == SeqStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), parent));
  } else if (auto it = std::find(waiting_.begin(), waiting_.end(), parent); it != waiting_.end()) {
    waiting_.erase(it);
  }
  kv_.free(parent->kv);
  sequences_.erase(parent->request_id);  // destroys parent
}

const Sequence* Scheduler::find(RequestId request_id) const {
  auto it = sequences_.find(request_id);
  return it == sequences_.end() ? nullptr : it->second.get();
}

SeqEvent Scheduler::finish(Sequence* seq, FinishReason reason, int64_t now_us, SeqEvent event) {
  if (seq->status == SeqStatus::kAwaitingFork) {
    // in no list: its parent let it go
  } else if (seq->status == SeqStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), seq));
  } else if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) {
    waiting_.erase(it);
  }
  kv_.free(seq->kv);
  // A drafter that learns across requests sees every output that ended on its own (an abort's may be cut anywhere).
  if (drafter_ != nullptr && reason != FinishReason::kAbort && seq->num_output_tokens() > 0)
    drafter_->learn(seq->tokens, seq->num_prompt_tokens);
  seq->timing.finish_us = now_us;
  event.request_id = seq->request_id;
  event.finished = true;
  event.finish_reason = reason;
  event.num_prompt_tokens = seq->num_prompt_tokens;
  event.num_cached_tokens = seq->num_cached_tokens;
  event.num_output_tokens = seq->num_output_tokens();
  event.timing = std::move(seq->timing);
  sequences_.erase(seq->request_id);  // destroys seq
  return event;
}

std::optional<SeqEvent> Scheduler::abort(RequestId request_id, int64_t now_us) {
  auto it = sequences_.find(request_id);
  if (it == sequences_.end() || it->second->is_fork_parent()) return std::nullopt;
  Sequence* seq = it->second.get();
  if (seq->status == SeqStatus::kAwaitingFork) {
    Sequence* parent = seq->fork_parent;
    parent->forks.erase(std::find(parent->forks.begin(), parent->forks.end(), seq));
    if (parent->forks.empty()) drop_parent(parent);
  }
  return finish(seq, FinishReason::kAbort, now_us, SeqEvent{});
}

std::vector<SeqEvent> Scheduler::abort_all(int64_t now_us) {
  std::vector<RequestId> ids;  // every request a client waits on; their parents leave with their last sample
  for (const auto& [id, seq] : sequences_)
    if (!seq->is_fork_parent()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<SeqEvent> events;
  for (RequestId id : ids) events.push_back(*abort(id, now_us));
  PAGODA_CHECK(sequences_.empty(), "{} sequences left after aborting every request", sequences_.size());
  return events;
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
  seq->draft_tokens.clear();
  seq->draft_chances.clear();
  seq->draft_length.forget_step();
  seq->status = SeqStatus::kWaiting;
  ++seq->timing.num_preemptions;
  ++num_preemptions_;
  insert_waiting(seq, true);
  plan.preempted.push_back(seq);
}

int32_t Scheduler::align_prompt_chunk(const Sequence& seq, int32_t first_pos, int32_t n) const {
  if (!config_.chunked_prefill || config_.whole_prompts || !kv_.has_state_slots() || !kv_.prefix_cache_enabled() ||
      first_pos >= seq.num_prompt_tokens)
    return n;
  const int32_t block_size = kv_.block_size();
  const int32_t end = first_pos + n;
  if (seq.snapshot_pos > first_pos && seq.snapshot_pos < end) return seq.snapshot_pos - first_pos;
  const int32_t boundary =
      end < seq.num_tokens() ? end / block_size * block_size : (seq.num_tokens() - 1) / block_size * block_size;
  return boundary > first_pos ? boundary - first_pos : n;
}

int32_t Scheduler::compute_prefill_budget(int32_t num_decoding, int64_t now_us) const {
  PrefillBudgetInputs in;
  in.num_decoding = num_decoding;
  in.max_batched_tokens = config_.max_batched_tokens;
  in.configured_cap = config_.max_prefill_tokens_with_decodes;
  in.tpot_slo_us = config_.tpot_slo_ms * 1e3;
  in.ttft_slo_us = config_.ttft_slo_ms * 1e3;
  in.step_cost = &step_time_;
  if (in.ttft_slo_us > 0.0) {
    // The earliest prompt: the oldest running one still prefilling, else the first waiting.
    const Sequence* urgent = nullptr;
    for (const Sequence* s : running_)
      if (s->num_uncomputed_tokens() > 1) {
        urgent = s;
        break;
      }
    if (urgent == nullptr && !waiting_.empty()) urgent = waiting_.front();
    if (urgent != nullptr) {
      in.urgent_prompt_tokens = urgent->num_uncomputed_tokens();
      in.urgent_time_left_us = double(urgent->timing.arrival_us - now_us) + in.ttft_slo_us;
    }
  }
  return prefill_budget_with_decodes(in);
}

const SchedulePlan& Scheduler::schedule(int64_t now_us) {
  SchedulePlan& plan = plan_;
  plan.seqs.clear();
  plan.preempted.clear();
  plan.num_batched_tokens = plan.num_prefill_tokens = plan.num_admitted_prompt_tokens = plan.num_draft_tokens = 0;
  int32_t budget = config_.max_batched_tokens;
  // Without chunked prefill a prompt is computed whole, so one prompt larger than the budget may join a step
  // (with the decodes, as vLLM does) as long as it is the step's only prefill; otherwise it would wait for
  // every running stream to end.
  bool prefill_in_plan = false;
  const bool chunked = config_.chunked_prefill;
  // Decode-paced prefill: prompt tokens this step may still take (a cap only while someone is decoding).
  int32_t prefill_budget = config_.max_batched_tokens;
  const int32_t num_decoding = int32_t(std::count_if(
      running_.begin(), running_.end(), [](const Sequence* s) { return s->num_uncomputed_tokens() == 1; }));
  plan.prefill_budget = -1;
  if (chunked && num_decoding > 0) {
    prefill_budget = compute_prefill_budget(num_decoding, now_us);
    plan.prefill_budget = prefill_budget;
  }

  // 1. Running sequences, oldest first. Victims come only from those not yet in the plan (the sequence being
  // scheduled included), so nothing in the plan is ever taken back.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* seq = running_[i];
    const int32_t remaining = seq->num_uncomputed_tokens();
    PAGODA_CHECK(remaining >= 1, "running sequence {} has nothing to compute", seq->request_id);
    const int32_t n = chunked ? align_prompt_chunk(*seq, seq->kv.num_computed_tokens,
                                                   std::min({remaining, budget, remaining > 1 ? prefill_budget : 1}))
                              : remaining;
    if (n == 0) {  // a prompt still prefilling, but this step's prompt tokens are spent
      ++i;
      continue;
    }
    if (!chunked && n > budget && prefill_in_plan) break;
    const int32_t first_pos = seq->kv.num_computed_tokens;
    // Drafts after a decode token, leaving a token of the budget to each running sequence after this one and
    // stopping where the sequence must end anyway. Without blocks for them the sequence decodes plainly.
    int32_t num_drafts = 0;
    // Constrained sequences speculate too: the verifier masks each draft's row as a plain draw's (grammar,
    // min_tokens), so a draft the grammar forbids is rejected. A prefill-only sequence samples nothing.
    if (remaining == 1 && speculative() && !seq->is_fork_parent() && !seq->prefill_only) {
      const int32_t num_later = int32_t(running_.size() - i - 1);
      const int32_t max_drafts = std::min(
          {config_.num_speculative_tokens, budget - n - num_later, seq->max_num_tokens - seq->num_tokens() - 1});
      const double marginal_cost = step_cost_.marginal_cost(int32_t(running_.size()));
      if (max_drafts > 0) {
        // A drafter that pays for each draft (a draft model's forward pass) is asked for no more than the adaptive
        // length would verify.
        const int32_t num_asked = config_.adaptive_num_speculative_tokens && drafter_->pays_per_draft()
                                      ? seq->draft_length.worth_asking(marginal_cost, max_drafts)
                                      : max_drafts;
        drafter_->propose(seq->tokens, num_asked, seq->draft_tokens, seq->draft_chances);
        if (int32_t(seq->draft_tokens.size()) > max_drafts) seq->draft_tokens.resize(size_t(max_drafts));
        if (seq->draft_chances.size() != seq->draft_tokens.size()) seq->draft_chances.clear();
      }
      if (config_.adaptive_num_speculative_tokens && !seq->draft_tokens.empty()) {
        const int32_t k = seq->draft_length.choose(seq->draft_tokens, seq->draft_chances, marginal_cost);
        seq->draft_tokens.resize(size_t(k));
        if (!seq->draft_chances.empty()) seq->draft_chances.resize(size_t(k));
      }
      num_drafts = int32_t(seq->draft_tokens.size());
      if (num_drafts > 0 && !kv_.allocate_slots(seq->kv, n + num_drafts)) {
        seq->draft_tokens.clear();
        seq->draft_chances.clear();
        num_drafts = 0;
      }
      // A recurrent state cannot be cut back to the accepted drafts: keep it as it is before the verification.
      if (num_drafts > 0 && seq->kv.state_slot >= 0) kv_.back_up_state(seq->kv, first_pos);
    }
    bool allocated = num_drafts > 0 || kv_.allocate_slots(seq->kv, n);
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
    const bool reaches_end = first_pos + n == seq->num_tokens();
    plan.seqs.push_back(ScheduledSeq{seq, first_pos, n + num_drafts, reaches_end && !seq->prefill_only, num_drafts,
                                     reaches_end && seq->prefill_only});
    plan.num_batched_tokens += n + num_drafts;
    plan.num_draft_tokens += num_drafts;
    budget -= n + num_drafts;
    if (remaining > 1) prefill_budget -= n;
    prefill_in_plan = prefill_in_plan || remaining > 1;
    ++i;
  }

  // 2. Admission. After a preemption nobody new comes in this step, so the freed blocks go to the preempted ones
  // first.
  const bool may_admit = plan.preempted.empty();
  int32_t num_seats = num_seats_taken();
  while (may_admit && !waiting_.empty() &&
         (chunked ? std::min(budget, prefill_budget) > 0 : (budget > 0 || !prefill_in_plan)) &&
         num_seats + seats_of(*waiting_.front()) <= config_.max_num_seqs) {
    Sequence* seq = waiting_.front();
    // A request for prompt logits (or mean or CLS pooling) needs every row of its prompt computed, so it takes no
    // hit (as vLLM does for prompt_logprobs).
    const bool whole = config_.whole_prompts;
    const PrefixHit hit =
        seq->needs_every_prompt_row() || whole ? PrefixHit{} : kv_.lookup_prefix(seq->tokens);
    const int32_t remaining = seq->num_tokens() - hit.num_cached_tokens;
    seq->snapshot_pos = hit.num_chain_tokens > hit.num_cached_tokens ? hit.num_chain_tokens : 0;
    // An encoder's prompt waits for a step with room for all of it (Engine::submit bounds it by the step budget).
    if (whole && remaining > budget && prefill_in_plan) break;
    const int32_t n =
        chunked && !whole
            ? align_prompt_chunk(*seq, hit.num_cached_tokens,
                                 std::min({remaining, budget, remaining > 1 ? prefill_budget : budget}))
            : remaining;
    if (!chunked && n > budget && prefill_in_plan) break;
    const bool first_admission = seq->timing.first_scheduled_us < 0 && seq->timing.num_preemptions == 0;
    if (!kv_.allocate_slots(seq->kv, n, hit)) break;  // wait for blocks to come back
    if (first_admission) seq->num_cached_tokens = hit.num_cached_tokens;
    waiting_.pop_front();
    seq->status = SeqStatus::kRunning;
    running_.push_back(seq);
    num_seats += seats_of(*seq);
    const int32_t first_pos = seq->kv.num_computed_tokens - n;
    const bool reaches_end = first_pos + n == seq->num_tokens();
    plan.seqs.push_back(
        ScheduledSeq{seq, first_pos, n, reaches_end && !seq->prefill_only, 0, reaches_end && seq->prefill_only});
    plan.num_batched_tokens += n;
    budget -= n;
    prefill_budget -= n;
    prefill_in_plan = true;
  }
  for (const ScheduledSeq& s : plan.seqs) {
    const Sequence& seq = *s.seq;
    plan.num_prefill_tokens +=
        std::max(0, std::min(s.first_pos + s.num_new_tokens, seq.num_prompt_tokens) - s.first_pos);
    if (seq.timing.first_scheduled_us < 0) {
      s.seq->timing.first_scheduled_us = now_us;
      plan.num_admitted_prompt_tokens += seq.num_prompt_tokens;
    }
  }
  return plan;
}

std::vector<SeqEvent>& Scheduler::update(const SchedulePlan& plan, std::span<SampledToken> sampled, int64_t now_us) {
  // Index the blocks the step filled first, so a sequence that finishes now leaves its prompt findable. A
  // sequence that verified drafts is indexed once its rejected drafts are rolled back (below). A hybrid model's
  // prompt chunk that ended at a block boundary leaves the state there for the prefix cache (decode steps do not:
  // a state is far larger than a block).
  for (const ScheduledSeq& s : plan.seqs) {
    if (s.num_draft_tokens != 0) continue;
    kv_.cache_full_blocks(s.seq->kv, s.seq->tokens);
    if (s.first_pos < s.seq->num_prompt_tokens) kv_.save_state_snapshot(s.seq->kv);
  }
  // Fork parents whose prompt this step finished: their samples, sampled from the parent's row, take their place.
  for (const ScheduledSeq& s : plan.seqs)
    if (s.samples && s.seq->is_fork_parent()) fork(s.seq);
  std::vector<SeqEvent>& events = events_;
  events.clear();
  for (size_t i = 0; i < sampled.size();) {
    Sequence& seq = *sampled[i].seq;
    // This sequence's tokens of the step: one, or its accepted drafts then one more.
    size_t end = i + 1;
    while (end < sampled.size() && sampled[end].seq == &seq) ++end;
    const bool verified_drafts = !seq.draft_tokens.empty();
    if (sampled[i].completes_prefill) {  // a prefill-only request's prompt is computed: it ends with its results
      PAGODA_CHECK(seq.status == SeqStatus::kRunning && seq.num_uncomputed_tokens() == 0 && end - i == 1,
                   "request {} completed its prefill before its prompt", seq.request_id);
      seq.timing.first_token_us = now_us;
      SeqEvent e;
      e.embedding = std::move(seq.pooled);
      e.prompt_logits = std::move(seq.prompt_logits);
      e.prompt_logprobs = std::move(seq.prompt_token_logprobs);
      events.push_back(finish(&seq, FinishReason::kStop, now_us, std::move(e)));
      i = end;
      continue;
    }
    if (sampled[i].grammar_dead_end) {  // no token to append: the grammar allowed none
      SeqEvent e;
      e.grammar_error = grammar_end_error(seq);
      events.push_back(finish(&seq, FinishReason::kAbort, now_us, std::move(e)));
      i = end;
      continue;
    }
    PAGODA_CHECK(
        seq.status == SeqStatus::kRunning &&
            (verified_drafts ? end - i <= seq.draft_tokens.size() + 1 &&
                                   seq.kv.num_computed_tokens == seq.num_tokens() + int32_t(seq.draft_tokens.size())
                             : end - i == 1 && seq.num_uncomputed_tokens() == 0),
        "request {} sampled {} tokens it was not scheduled to sample", seq.request_id, end - i);
    if (verified_drafts)
      seq.draft_length.record_verified(int32_t(seq.draft_tokens.size()), int32_t(end - i) - 1);
    else
      seq.draft_length.record_sampled(sampled[i].token);
    for (const size_t first = i; i < end; ++i) {
      SampledToken& t = sampled[i];
      if (t.grammar_dead_end) {  // after accepted drafts, the grammar allowed nothing: they stay, the request ends
        SeqEvent e;
        e.grammar_error = grammar_end_error(seq);
        events.push_back(finish(&seq, FinishReason::kAbort, now_us, std::move(e)));
        i = end;
        break;
      }
      PAGODA_CHECK(i + 1 == end || t.token == seq.draft_tokens[i - first],
                   "request {}: token {} of the step is not the draft it accepted", seq.request_id, i - first);
      seq.tokens.push_back(t.token);
      if (seq.timing.first_token_us < 0) seq.timing.first_token_us = now_us;
      seq.timing.token_us.push_back(now_us);
      SeqEvent e;
      e.request_id = seq.request_id;
      e.token = t.token;
      e.logprobs = std::move(t.logprobs);
      e.logits = std::move(t.logits);
      if (seq.num_output_tokens() == 1) {
        e.prompt_logits = std::move(seq.prompt_logits);
        e.prompt_logprobs = std::move(seq.prompt_token_logprobs);
      }
      // The one place a generation ends on its own. A stop string wins over the length limit it coincides with
      // (the text stops there, as OpenAI reports it).
      std::optional<FinishReason> reason;
      // A token that completes the grammar ends it too: nothing but an end token could follow.
      if (t.completes_stop_string || t.completes_grammar || (!seq.sampling.ignore_eos && ends_generation(t.token)) ||
          std::find(seq.sampling.stop_token_ids.begin(), seq.sampling.stop_token_ids.end(), t.token) !=
              seq.sampling.stop_token_ids.end())
        reason = FinishReason::kStop;
      else if (seq.num_tokens() >= seq.max_num_tokens)
        reason = FinishReason::kLength;
      if (verified_drafts && (reason || i + 1 == end)) {
        // The KV of the last token and of the accepted drafts stays (all but the newest token are computed); the
        // rejected drafts' blocks go back to the pool. Only then do the filled blocks get their hashes.
        kv_.roll_back(seq.kv, seq.num_tokens() - 1);
        seq.draft_tokens.clear();
        seq.draft_chances.clear();
        kv_.cache_full_blocks(seq.kv, seq.tokens);
      }
      if (reason) {
        events.push_back(finish(&seq, *reason, now_us, std::move(e)));
        i = end;  // seq is gone; any later tokens it had this step are dropped
        break;
      }
      e.num_prompt_tokens = seq.num_prompt_tokens;
      e.num_cached_tokens = seq.num_cached_tokens;
      e.num_output_tokens = seq.num_output_tokens();
      events.push_back(std::move(e));
    }
  }
  return events;
}

}  // namespace pagoda
