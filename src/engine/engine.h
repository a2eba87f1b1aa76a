// Engine: continuous batching over one model, the one generation loop of pagoda (run, the benchmarks, the
// perplexity and calibration passes and serve all run through it). Takes requests from any thread (submit,
// cancel), runs the step loop on its own thread and owns everything that loop uses: the thread pool, the KV
// storage and its manager, the drafter, the scheduler (which owns the sequences), the output processor (text and
// streams), the workspace and the batch builder. Each step: schedule (with speculative decoding, a decoding
// sequence's drafts join its last token) -> build the batch -> one forward call for every scheduled token ->
// sample (verifying drafts: the accepted ones, then one more token) and pool (embeddings) -> find stop strings in the
// new text -> Scheduler::update (the one place a sequence finishes) -> publish the outputs. Borrows the model and
// tokenizer, which must outlive it. Thread-safe: submit, cancel and stats may be called concurrently; the loop is the
// only thread that touches sequences, KV and the model.
#pragma once

#include <pagoda/status.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "engine/batch_builder.h"
#include "engine/draft_verifier.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/generate_request.h"
#include "engine/output_processor.h"
#include "engine/request_stream.h"
#include "engine/sampled_token.h"
#include "engine/scheduler.h"
#include "engine/token_constraints.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "kv/state_storage.h"
#include "model/model.h"
#include "model/workspace.h"
#include "spec/drafter.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

class Engine {
 public:
  // Checks the config against the model and allocates everything; the loop thread starts at once.
  static Result<std::unique_ptr<Engine>> create(const Model& model, const Tokenizer& tokenizer,
                                                const EngineConfig& config);
  // An engine without a tokenizer (scoring passes): outputs carry token ids, logprobs and logits but no text,
  // no token ends a generation but max_tokens and the context, and requests with stop strings are refused.
  static Result<std::unique_ptr<Engine>> create(const Model& model, const EngineConfig& config);
  ~Engine();  // cancels what is still running (each stream gets a finished "abort" event) and joins the loop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. Errors: kInvalidArgument (empty prompt, unknown token ids, bad sampling parameters, a
  // prompt + max_tokens the KV pool can never hold, stop strings without a tokenizer, prompt logits the engine
  // was not created for, a prefill-only request that asks for something sampled), kContextLengthExceeded (a
  // prompt that leaves no room in the context), kResourceExhausted (the waiting queue is full), kUnavailable
  // (shutting down). A front end that checks its requests first (the server: server/request_limits.h) meets only
  // the last two, which depend on the moment; for it the others are the engine's invariants, kept as errors
  // rather than asserts because the C++ API and the CLI hand requests straight in.
  Result<RequestHandle> submit(GenerateRequest request);
  // Queues n samples of one prompt (OpenAI's and vLLM's n): a handle per sample, each its own request (own id,
  // stream, cancel). The prompt is computed once and its blocks are shared by the samples until written (copy on
  // write), in groups of at most batch_size; with a seed, sample i draws with seed + i. Errors: as submit.
  Result<std::vector<RequestHandle>> submit_samples(GenerateRequest request, int32_t n);
  // Queues several requests at once (an offline batch, llama-batched-bench's B sequences): all or none, in order,
  // and the loop's next step sees every one of them, so what is scheduled together does not depend on how fast the
  // caller submits. Errors: as submit, for the first request that has one (its index in the message).
  Result<std::vector<RequestHandle>> submit_batch(std::vector<GenerateRequest> requests);
  // Stops a request at the next step boundary and frees its blocks; its stream ends with an "abort" event.
  // Unknown or finished ids are ignored.
  void cancel(RequestId request_id);

  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  int32_t model_dim() const { return model_.config().dim; }  // a pooled vector's length
  // The model's classification-head outputs (a reranker's; Pooling::kRank), 0 when it has none.
  int32_t num_rank_outputs() const { return model_.num_rank_outputs(); }
  bool rank_reads_last_token() const { return model_.rank_reads_last_token(); }
  int64_t kv_bytes_per_block() const { return kv_storage_.bytes_per_block(); }
  int64_t kv_total_bytes() const { return kv_storage_.total_bytes(); }
  // A hybrid model's recurrent states: bytes per sequence and in all (0 for any other model).
  int64_t state_bytes_per_seq() const { return state_storage_.bytes_per_slot(); }
  int64_t state_total_bytes() const { return state_storage_.total_bytes(); }
  int32_t num_threads() const { return pool_.num_threads(); }
  // Microseconds on the engine's clock (the one RequestTiming uses).
  int64_t now_us() const;

 private:
  // A submitted request on its way to the loop thread.
  struct Submission {
    std::unique_ptr<Sequence> parent;                     // n > 1: the fork parent, no client of its own
    std::vector<std::unique_ptr<Sequence>> samples;       // what the clients wait on
    std::vector<std::shared_ptr<RequestStream>> streams;  // [samples.size()]
  };

  Engine(const Model& model, const Tokenizer* tokenizer, const EngineConfig& config);
  static Result<std::unique_ptr<Engine>> create_impl(const Model& model, const Tokenizer* tokenizer,
                                                     const EngineConfig& config);
  // submit's checks of one request (n samples of it); normalizes what a prefill-only request does not read.
  Status check_request(GenerateRequest& request, int32_t n) const;
  // Whether the waiting queue takes `num_entries` more inbox entries (and the engine is not stopping).
  Status check_queue_room_locked(int32_t num_entries) const;
  void enqueue_locked(GenerateRequest request, int32_t n, std::vector<RequestHandle>& handles);
  void loop();
  // A step threw: every request in flight ends (aborted), and the loop goes on.
  void fail_all(const std::string& what);
  void take_inbox();
  void step();
  // Before the loop starts: the prefill budget's step model from a few forward passes (see engine.cc).
  void calibrate_step_time();
  // The KV cache and the recurrent states, as the model reads and writes them.
  KvCacheView cache_view() {
    KvCacheView view = kv_storage_.view();
    view.state = state_storage_.view();
    return view;
  }
  // Copies the prompt rows the plan's requests asked for and samples a token for every sampling sequence.
  void sample(const SchedulePlan& plan, const LogitsView& logits);
  void sample_into(Sequence& seq, std::span<float> row);
  // Adds the step's hidden rows to their pooling requests' vectors, and ends (a SampledToken without a token)
  // each prefill-only request whose prompt the step finished.
  void pool(const SchedulePlan& plan,
            const LogitsView& output);  // one token for `seq` from `row` (edited) into sampled_
  // What a step adds to the figures.
  struct StepFigures {
    int32_t num_running = 0;
    int32_t num_used_blocks = 0;  // once scheduled
    int32_t num_admitted_prompt_tokens = 0;
    int32_t num_prefill_tokens = 0;
    int32_t num_sampled = 0;
    int32_t prefill_budget = -1;  // SchedulePlan::prefill_budget
  };
  // Speculative decoding's tally since the last publish (loop thread), added to stats_ by publish.
  struct SpecFigures {
    int64_t num_drafts = 0;
    int64_t num_draft_tokens = 0;
    int64_t num_accepted_tokens = 0;
    std::vector<int64_t> num_accepted_tokens_per_pos;
  };
  // Updates the figures (so whoever sees a finished event also sees the blocks it gave back), with a step's own
  // when given, then publishes the events (moving from them).
  void publish(std::span<SeqEvent> events, const StepFigures* step = nullptr);
  void update_stats_locked();  // the scheduler's and the pool's figures into stats_; mutex_ held

  const Model& model_;
  const Tokenizer* tokenizer_;  // nullptr: token ids only
  EngineConfig config_;
  int64_t start_ns_;
  ThreadPool pool_;
  KvStorage kv_storage_;
  KvCacheManager kv_manager_;
  StateStorage state_storage_;  // a hybrid model's recurrent states: kv_manager_'s sequence slots, then its snapshots
  std::unique_ptr<Drafter> drafter_;  // null without speculative decoding; before scheduler_, which borrows it
  std::vector<TokenId> end_of_generation_ids_;  // the tokenizer's (none without one)
  Scheduler scheduler_;
  OutputProcessor output_;
  Workspace workspace_;
  BatchBuilder batch_builder_;
  DraftVerifier draft_verifier_;

  // Loop-thread state, reused every step.
  std::vector<KvBlockCopy> block_copies_;  // this step's copy-on-writes, for the BatchView
  std::vector<SampledToken> sampled_;
  std::vector<TokenLogprobs> prompt_scores_;  // this step's scored prompt rows (prompt_logprobs), in row order
  std::vector<float> raw_row_;                // f32 [vocab]: a logits row before sampling changed it
  std::vector<float> fork_row_;               // f32 [vocab]: a fork parent's row, copied for each of its samples
  SpecFigures spec_figures_;
  TokenConstraints constraints_;  // grammar masks and min_tokens, before every draw (borrows end_of_generation_ids_)

  // Shared with submitters, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Submission> inbox_;
  std::vector<RequestId> cancels_;
  bool stopping_ = false;
  RequestId next_request_id_ = 1;
  uint64_t next_arrival_idx_ = 0;
  EngineStats stats_;  // published after every step

  std::thread loop_thread_;
};

}  // namespace pagoda
