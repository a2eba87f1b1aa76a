// Scheduler: decides, step by step, which sequences compute how many tokens. Owns the waiting and running
// lists (pointers; the Engine owns the sequences) and drives KvCacheManager, the only KV API it uses; it never
// sees a tensor. Each step: running sequences first, in admission order (a decode token each, or the next
// chunk of their prompt); when blocks run out the lowest-priority, newest running sequence is preempted (its
// blocks freed, itself re-queued at the front to be recomputed later); then waiting sequences are admitted,
// best priority and oldest first, with their prefix-cache hit, while the token budget, the sequence cap and
// the free blocks allow. Invariants: a running sequence holds KV for exactly kv.num_computed_tokens positions;
// a waiting one holds none.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/schedule_plan.h"
#include "engine/scheduler_config.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"

namespace pagoda {

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv);

  // Queues a new sequence (status waiting, no KV).
  void add(Sequence* seq);
  // Takes `seq` out of whichever list holds it and frees its blocks (cancellation). False if it holds none.
  bool remove(Sequence* seq);
  // The plan of the next step; allocates the KV slots it needs. Empty when there is nothing to run.
  SchedulePlan schedule();
  // After the step's forward pass (and sampling) ran: indexes the blocks that became full, for the prefix
  // cache.
  void on_step_done(const SchedulePlan& plan);
  // A running sequence ended: it leaves (blocks freed, status finished).
  void finish(Sequence* seq);

  int32_t num_waiting() const { return int32_t(waiting_.size()); }
  int32_t num_running() const { return int32_t(running_.size()); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions() const { return num_preemptions_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  void preempt(Sequence* seq, SchedulePlan& plan);
  void release(Sequence* seq);
  // Among running_[first_idx..]: the lowest priority, newest among equals; nullptr when that range is empty.
  Sequence* pick_victim(size_t first_idx) const;
  void insert_waiting(Sequence* seq, bool at_front_of_its_priority);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::deque<Sequence*> waiting_;   // ordered by (priority, preempted first, arrival)
  std::vector<Sequence*> running_;  // admission order
  int64_t num_preemptions_ = 0;
};

}  // namespace pagoda
