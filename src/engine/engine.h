// Engine: continuous batching over one model. Takes requests from any thread (submit, cancel), runs the step
// loop on its own thread (schedule -> build the batch -> one forward call for every scheduled token ->
// sample -> stop checks -> stream events) and owns everything that loop uses: the thread pool, the KV storage
// and its manager, the scheduler, the workspace and the sequences. Borrows the model and tokenizer, which must
// outlive it. Thread-safe: submit, cancel and stats may be called concurrently; the loop is the only thread
// that touches sequences, KV and the model.
#pragma once

#include <pagoda/status.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "engine/batch_builder.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/generate_request.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "model/model.h"
#include "model/workspace.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

class Engine {
 public:
  // Checks the config against the model and allocates everything; the loop thread starts at once.
  static Result<std::unique_ptr<Engine>> create(const Model& model, const Tokenizer& tokenizer,
                                                const EngineConfig& config);
  ~Engine();  // cancels what is still running (each stream gets a finished "abort" event) and joins the loop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. Errors: kInvalidArgument (empty prompt, unknown token ids, bad sampling parameters, a
  // prompt that can never fit the context or the KV pool), kResourceExhausted (the waiting queue is full),
  // kUnavailable (shutting down).
  Result<RequestHandle> submit(GenerateRequest request);
  // Stops a request at the next step boundary and frees its blocks; its stream ends with an "abort" event.
  // Unknown or finished ids are ignored.
  void cancel(RequestId request_id);

  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  int64_t kv_bytes_per_block() const { return kv_storage_.bytes_per_block(); }
  int64_t kv_total_bytes() const { return kv_storage_.total_bytes(); }
  int32_t num_threads() const { return pool_.num_threads(); }
  // Microseconds on the engine's clock (the one RequestTiming uses).
  int64_t now_us() const;

 private:
  Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config);
  void loop();
  void take_inbox();
  void step();
  void publish(Sequence& seq, bool finished, FinishReason reason);
  void finish_sequence(Sequence& seq, FinishReason reason, bool running);
  void abort_all();
  void update_stats_locked();  // the scheduler's and the pool's figures into stats_; mutex_ held

  const Model& model_;
  const Tokenizer& tokenizer_;
  EngineConfig config_;
  int64_t start_ns_;
  ThreadPool pool_;
  KvStorage kv_storage_;
  KvCacheManager kv_manager_;
  Scheduler scheduler_;
  Workspace workspace_;
  BatchBuilder batch_builder_;
  std::vector<KvBlockCopy> block_copies_;  // this step's copy-on-writes, for the BatchView

  // Loop-thread state.
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> sequences_;
  std::vector<Sequence*> finished_this_step_;

  // Shared with submitters, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::vector<RequestId> cancels_;
  bool stopping_ = false;
  RequestId next_request_id_ = 1;
  uint64_t next_arrival_idx_ = 0;
  EngineStats stats_;  // published after every step

  std::thread loop_thread_;
};

}  // namespace pagoda
