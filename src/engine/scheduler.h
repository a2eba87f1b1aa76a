// Scheduler: decides, step by step, which sequences compute how many tokens, and after each step what became of
// them: the one owner of the sequences and of "finished". Owns every sequence between add() and the event that
// ends it, in a waiting and a running list, and drives KvCacheManager, the only KV API it uses; it never sees a
// tensor or a piece of text. Each step, schedule(): running sequences first, in admission order (a decode token
// each, or the next chunk of their prompt); when blocks run out the lowest-priority, newest running sequence is
// preempted (its blocks freed, itself re-queued at the front to be recomputed later); then waiting sequences are
// admitted, best priority and oldest first, with their prefix-cache hit, while the token budget, the sequence cap
// and the free blocks allow. After the forward pass, update(): each sampled token is appended, the blocks that
// became full are indexed for the prefix cache, and a sequence whose token ends it (a stop string the output
// processor found in its text, an end-of-generation token or one of its stop_token_ids, the end of its grammar,
// max_tokens, the end of the context) leaves with its blocks freed; one whose grammar allowed no token leaves
// aborted. With a drafter, a decoding sequence may compute its last token and up to num_speculative_tokens drafts
// in one step (the drafter proposes them inside schedule(): a draft model's forward passes run there and count in
// the step's time); update() keeps the accepted ones and rolls the rest's KV back (a hybrid model's sequence that
// rejected a draft goes back to its state before the step and computes its accepted tokens again in the next). A hybrid model's prompt chunks end at
// block boundaries, where update() has the KV manager snapshot their states for the prefix cache. Invariants: a running sequence holds
// KV for exactly kv.num_computed_tokens positions; a waiting one holds none. n samples of one prompt are prefilled once
// by a fork parent and forked after it (add_group).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/sampled_token.h"
#include "engine/schedule_plan.h"
#include "engine/scheduler_config.h"
#include "engine/seq_event.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"
#include "spec/draft_length.h"
#include "spec/drafter.h"

namespace pagoda {

class Scheduler {
 public:
  // `eos_token_ids`: the tokens that end a generation (EOS and end-of-turn), unless SamplingParams::ignore_eos.
  // `drafter` (borrowed; may be null): speculative decoding, up to config.num_speculative_tokens drafts a step
  // for each decoding sequence.
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv, std::vector<TokenId> eos_token_ids,
            Drafter* drafter = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Takes a new sequence (waiting, no KV; its request id unique among those held). Returns it, borrowed.
  Sequence* add(std::unique_ptr<Sequence> seq);
  // Takes n samples of one prompt: `parent` (waiting; the prompt, computed once, sampling nothing itself) and its
  // samples (same prompt, their own sampling; held, status kAwaitingFork). The parent is admitted only with a
  // seat in the step for every sample; the step that computes its prompt's last token samples each of them from
  // its logits row (the engine does, for SampledToken::seq = the sample), and update() forks the parent's blocks
  // into them before appending. Returns the parent, borrowed.
  Sequence* add_group(std::unique_ptr<Sequence> parent, std::vector<std::unique_ptr<Sequence>> samples);
  // Cancels a request: it leaves whichever list holds it, its blocks are freed, and its finished (abort) event is
  // returned; nullopt when no sequence has that id (or it is a fork parent, which has no client). A sample
  // cancelled before its fork leaves its parent; the parent of no sample leaves too.
  std::optional<SeqEvent> abort(RequestId request_id, int64_t now_us);
  // Cancels everything held (shutdown), returning the abort events.
  std::vector<SeqEvent> abort_all(int64_t now_us);

  // The plan of the next step; allocates the KV slots it needs. Empty when there is nothing to run. Sequences
  // scheduled for the first time get timing.first_scheduled_us = now_us. The plan is the scheduler's, reused
  // (no allocation on the hot path): valid until the next schedule().
  const SchedulePlan& schedule(int64_t now_us);
  // After the step's forward pass: `sampled` holds one token per sampling sequence of `plan` (sampled at
  // now_us), or for a fork parent one per sample, or for a sequence that verified drafts its accepted drafts then
  // one more token (consecutive, in order). Returns an event per token, in order, in the scheduler's reused
  // buffer (the caller may move from them; valid until the next update()); finished sequences have left and are
  // destroyed. A sequence that verified drafts keeps the KV of its accepted ones and gives back the rest (a
  // token that ends it ends it there: the tokens after it are dropped).
  std::vector<SeqEvent>& update(const SchedulePlan& plan, std::span<SampledToken> sampled, int64_t now_us);

  // What the last decode step cost (its tokens, and its wall time), for the step-cost model behind the adaptive
  // draft length.
  void record_step(int32_t num_tokens, double cost_us) { step_cost_.record(num_tokens, cost_us); }
  const StepCostModel& step_cost() const { return step_cost_; }
  // Every step's tokens and wall time, for the prefill budget's latency targets (prefill_budget.h).
  void record_step_time(int32_t num_tokens, double wall_us) { step_time_.record(num_tokens, wall_us); }
  const StepCostModel& step_time() const { return step_time_; }

  // The sequence of a request still held, or nullptr.
  const Sequence* find(RequestId request_id) const;
  int32_t num_waiting() const { return int32_t(waiting_.size()); }
  int32_t num_running() const { return int32_t(running_.size()); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions() const { return num_preemptions_; }
  bool speculative() const { return drafter_ != nullptr && config_.num_speculative_tokens > 0; }
  const SchedulerConfig& config() const { return config_; }

 private:
  bool ends_generation(TokenId token) const;
  // The prompt tokens this step may take while `num_decoding` sequences decode (prefill_budget.h).
  int32_t compute_prefill_budget(int32_t num_decoding, int64_t now_us) const;
  // Seats in a step the running sequences hold or have promised: a fork parent counts each of its samples.
  int32_t num_seats_taken() const;
  static int32_t seats_of(const Sequence& seq) { return std::max<int32_t>(1, int32_t(seq.forks.size())); }
  // The parent's samples take its place in the running list, each sharing its blocks; the parent is destroyed.
  void fork(Sequence* parent);
  // Drops a fork parent left without samples (they were all cancelled): blocks freed, destroyed.
  void drop_parent(Sequence* parent);
  void preempt(Sequence* seq, SchedulePlan& plan);
  // Takes `seq` out of the lists, frees its blocks, and returns its finished event; destroys it.
  SeqEvent finish(Sequence* seq, FinishReason reason, int64_t now_us, SeqEvent event);
  // Among running_[first_idx..]: the lowest priority, newest among equals; nullptr when that range is empty.
  Sequence* pick_victim(size_t first_idx) const;
  void insert_waiting(Sequence* seq, bool at_front_of_its_priority);
  // A hybrid model's prefix cache snapshots recurrent states only where a step ends: a prompt chunk of `n` tokens
  // from `first_pos` (in the prompt: a recomputation of accepted drafts is not cut) is cut to end at the sequence's snapshot_pos (a prefix already cached for others), else at a
  // block boundary, or, in the chunk that would finish the tokens, at the last boundary before the last token (the
  // deepest one a lookup of the same tokens can use). n itself otherwise.
  int32_t align_prompt_chunk(const Sequence& seq, int32_t first_pos, int32_t n) const;

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::vector<TokenId> eos_token_ids_;  // sorted
  Drafter* drafter_;                    // may be null
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> sequences_;
  std::deque<Sequence*> waiting_;   // ordered by (priority, preempted first, arrival)
  std::vector<Sequence*> running_;  // admission order
  int64_t num_preemptions_ = 0;
  // A step over 1.5x its fitted cost counts as 1.5x: a preempted step must not drag the fit.
  StepCostModel step_cost_{0.995, 0.3, 1.5};
  StepCostModel step_time_{0.99};  // forgets faster: the load on the machine changes
  SchedulePlan plan_;              // the last schedule()'s
  std::vector<SeqEvent> events_;   // the last update()'s
};

}  // namespace pagoda
