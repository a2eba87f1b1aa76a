// The step loop and the thread-safe front of the engine.
#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/check.h"

namespace pagoda {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// Rows of the forward's workspace: when prefill is not chunked a step may hold one whole prompt besides the
// decodes of every other running sequence.
int32_t step_token_capacity(const EngineConfig& c) {
  return c.scheduler.chunked_prefill
             ? c.scheduler.max_batched_tokens
             : std::max(c.scheduler.max_batched_tokens, c.max_seq_len + c.scheduler.max_num_seqs);
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const Tokenizer& tokenizer,
                                               const EngineConfig& config) {
  const ModelConfig& mc = model.config();
  if (config.max_seq_len < 2)
    return make_error(fmt::format("max_seq_len must be at least 2, got {}", config.max_seq_len));
  if (config.kv.block_size < 1) return make_error("kv_cache.page_size must be positive");
  if (config.scheduler.max_num_seqs < 1) return make_error("batch_size must be at least 1");
  if (config.scheduler.max_batched_tokens < 1) return make_error("--max-batched-tokens must be at least 1");
  if (config.scheduler.max_batched_tokens < config.scheduler.max_num_seqs)
    return make_error(
        fmt::format("--max-batched-tokens ({}) must be at least batch_size ({}): every running "
                    "sequence needs a token of the step's budget",
                    config.scheduler.max_batched_tokens, config.scheduler.max_num_seqs));
  if (config.max_queue < 1) return make_error("--max-queue must be at least 1");
  const int32_t blocks_per_seq = ceil_div(config.max_seq_len, config.kv.block_size);
  if (config.kv.num_blocks < 1)
    return make_error(fmt::format(
        "the KV pool of {} blocks cannot hold one sequence of max_seq_len {} ({} blocks of {}); give it more "
        "blocks (--kv-blocks) or memory (--kv-memory), or lower --max-seq-len",
        config.kv.num_blocks, config.max_seq_len, blocks_per_seq, config.kv.block_size));
  if (tokenizer.vocab_size() != mc.vocab_size)
    return make_error(fmt::format("the tokenizer has {} tokens, the model {}", tokenizer.vocab_size(), mc.vocab_size));
  return std::unique_ptr<Engine>(new Engine(model, tokenizer, config));
}

Engine::Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      start_ns_(steady_ns()),
      pool_(config.num_threads),
      kv_storage_(model.config(), config.kv.num_blocks, config.kv.block_size, config.kv_dtype),
      kv_manager_(config.kv),
      scheduler_(config.scheduler, kv_manager_),
      workspace_(model.config(), step_token_capacity(config), config.max_seq_len, config.scheduler.max_num_seqs,
                 pool_.num_threads()),
      batch_builder_(step_token_capacity(config), config.scheduler.max_num_seqs,
                     ceil_div(config.max_seq_len, config.kv.block_size)) {
  stats_.kv = kv_manager_.stats();
  loop_thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  loop_thread_.join();
}

int64_t Engine::now_us() const { return (steady_ns() - start_ns_) / 1000; }

Result<RequestHandle> Engine::submit(GenerateRequest request) {
  const ModelConfig& mc = model_.config();
  const int32_t num_prompt = int32_t(request.prompt.size());
  if (num_prompt == 0) return make_error("the prompt is empty (no tokens)", StatusCode::kInvalidArgument);
  for (TokenId t : request.prompt)
    if (t < 0 || t >= mc.vocab_size)
      return make_error(fmt::format("prompt token id {} is outside the vocabulary (0..{})", t, mc.vocab_size - 1),
                        StatusCode::kInvalidArgument);
  if (Status valid = request.sampling.validate(); !valid.ok())
    return make_error(valid.message(), StatusCode::kInvalidArgument);
  if (num_prompt >= config_.max_seq_len)
    return make_error(fmt::format("the prompt is {} tokens but the context holds {} (max_seq_len), with room for at "
                                  "least one new token; shorten the prompt",
                                  num_prompt, config_.max_seq_len),
                      StatusCode::kContextLengthExceeded);
  // A sequence alone must be able to reach its end in the pool, or preemption could never make room for it.
  const int32_t max_len =
      int32_t(std::min<int64_t>(int64_t(num_prompt) + request.sampling.max_tokens, config_.max_seq_len));
  const int32_t blocks_needed = ceil_div(max_len, config_.kv.block_size);
  if (blocks_needed > config_.kv.num_blocks)
    return make_error(fmt::format("prompt + max_tokens needs {} KV blocks but the pool holds {}; lower max_tokens "
                                  "or give the KV cache more memory",
                                  blocks_needed, config_.kv.num_blocks),
                      StatusCode::kInvalidArgument);
  RequestHandle handle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return make_error("the engine is shutting down", StatusCode::kUnavailable);
    if (stats_.num_waiting + int32_t(inbox_.size()) >= config_.max_queue)
      return make_error(fmt::format("the queue is full ({} requests waiting); retry later", config_.max_queue),
                        StatusCode::kResourceExhausted);
    handle.id = next_request_id_++;
    auto seq = std::make_unique<Sequence>(handle.id, std::move(request), config_.kv.block_size, tokenizer_,
                                          next_arrival_idx_++, now_us());
    handle.stream = seq->stream;
    inbox_.push_back(std::move(seq));
  }
  wake_.notify_one();
  return handle;
}

void Engine::cancel(RequestId request_id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(request_id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats s = stats_;
  s.num_waiting += int32_t(inbox_.size());
  return s;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !cancels_.empty() || scheduler_.has_work(); });
      if (stopping_) break;
    }
    take_inbox();
    if (scheduler_.has_work()) step();
  }
  take_inbox();
  abort_all();
}

void Engine::take_inbox() {
  std::vector<std::unique_ptr<Sequence>> arrived;
  std::vector<RequestId> cancels;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    arrived.swap(inbox_);
    cancels.swap(cancels_);
  }
  for (std::unique_ptr<Sequence>& seq : arrived) {
    scheduler_.add(seq.get());
    sequences_.emplace(seq->request_id, std::move(seq));
  }
  for (RequestId id : cancels) {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) continue;
    Sequence& seq = *it->second;
    scheduler_.remove(&seq);
    finish_sequence(seq, FinishReason::kAbort, false);
  }
  if (!cancels.empty() || !arrived.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    update_stats_locked();
  }
}

void Engine::abort_all() {
  std::vector<Sequence*> all;
  for (auto& [id, seq] : sequences_) all.push_back(seq.get());
  for (Sequence* seq : all) {
    scheduler_.remove(seq);
    finish_sequence(*seq, FinishReason::kAbort, false);
  }
}

void Engine::publish(Sequence& seq, bool finished, FinishReason reason) {
  RequestOutput out;
  out.request_id = seq.request_id;
  const std::span<const TokenId> output = seq.output();
  out.new_tokens.assign(output.begin() + seq.num_published_tokens, output.end());
  seq.num_published_tokens = int32_t(output.size());
  out.logprobs = std::move(seq.unpublished_logprobs);
  seq.unpublished_logprobs.clear();
  out.num_prompt_tokens = seq.num_prompt_tokens;
  out.num_cached_tokens = seq.num_cached_tokens;
  out.num_output_tokens = int32_t(output.size());
  out.finished = finished;
  out.finish_reason = reason;
  // Text: what the decoder and stop checker release for the new tokens; at the end, what they held back.
  bool stopped_by_string = seq.stop_checker.stopped();
  for (TokenId t : out.new_tokens) {
    if (stopped_by_string) break;
    if (tokenizer_.ends_generation(t) && !seq.sampling.ignore_eos) continue;  // EOS has no text
    StopChecker::Output piece = seq.stop_checker.push(seq.decoder.push(t));
    out.text += piece.text;
    stopped_by_string = piece.stopped;
  }
  if (finished && !stopped_by_string && reason != FinishReason::kAbort) {
    StopChecker::Output tail = seq.stop_checker.push(seq.decoder.flush());
    out.text += tail.text;
    if (!tail.stopped) out.text += seq.stop_checker.flush();
  }
  if (finished) out.timing = seq.timing;
  seq.stream->push(std::move(out));
}

void Engine::finish_sequence(Sequence& seq, FinishReason reason, bool running) {
  if (running) scheduler_.finish(&seq);
  seq.timing.finish_us = now_us();
  {
    // Figures first, so whoever sees the finished event also sees the blocks it gave back.
    std::lock_guard<std::mutex> lock(mutex_);
    update_stats_locked();
    switch (reason) {
      case FinishReason::kStop: ++stats_.num_finished_stop; break;
      case FinishReason::kLength: ++stats_.num_finished_length; break;
      case FinishReason::kAbort: ++stats_.num_finished_abort; break;
    }
  }
  publish(seq, true, reason);
  sequences_.erase(seq.request_id);  // destroys seq
}

void Engine::step() {
  SchedulePlan plan = scheduler_.schedule();
  if (plan.empty()) return;
  const int32_t num_running = scheduler_.num_running();
  const int64_t step_start_us = now_us();
  block_copies_.clear();
  for (const BlockCopy& copy : kv_manager_.pending_copies()) {
    kv_storage_.copy_block(copy.src_block_id, copy.dst_block_id);
    block_copies_.push_back(KvBlockCopy{copy.src_block_id, copy.dst_block_id});
  }
  kv_manager_.clear_pending_copies();
  int64_t num_new_prompt_tokens = 0;
  for (const ScheduledSeq& s : plan.seqs) {
    if (s.seq->timing.first_scheduled_us < 0) {
      s.seq->timing.first_scheduled_us = step_start_us;
      num_new_prompt_tokens += s.seq->num_prompt_tokens;
    }
  }

  BatchView batch = batch_builder_.build(plan);
  batch.block_copies = block_copies_;
  const LogitsView logits = model_.forward(batch, kv_storage_.view(), workspace_, pool_);
  const int64_t sampled_us = now_us();

  // Sample, append, and decide who is done. A sequence that stops is finished after the prefix cache has
  // indexed its blocks, so its prompt stays findable.
  struct Ending {
    Sequence* seq;
    FinishReason reason;
  };
  std::vector<Ending> endings;
  const std::vector<int32_t>& rows = batch_builder_.logits_seq_idx();
  int64_t num_sampled = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence& seq = *plan.seqs[size_t(rows[r])].seq;
    const std::span<float> row = logits.row(int32_t(r));
    if (seq.sampling.logprobs >= 0) seq.raw_logits.assign(row.begin(), row.end());  // sample() edits the row
    const TokenId next = seq.sampler.sample(row, seq.prompt(), seq.output());
    if (seq.sampling.logprobs >= 0)
      seq.unpublished_logprobs.push_back(compute_token_logprobs(seq.raw_logits, next, seq.sampling.logprobs));
    seq.tokens.push_back(next);
    ++num_sampled;
    if (seq.timing.first_token_us < 0) seq.timing.first_token_us = sampled_us;
    seq.timing.token_us.push_back(sampled_us);
    std::optional<FinishReason> reason;
    if (tokenizer_.ends_generation(next) && !seq.sampling.ignore_eos) {
      reason = FinishReason::kStop;
    } else if (seq.num_output_tokens() >= seq.sampling.max_tokens || seq.num_tokens() >= config_.max_seq_len) {
      reason = FinishReason::kLength;
    }
    if (reason) {
      endings.push_back({&seq, *reason});
    } else {
      publish(seq, false, FinishReason::kLength);
      // A stop string ends the sequence as soon as its text is complete.
      if (seq.stop_checker.stopped()) endings.push_back({&seq, FinishReason::kStop});
    }
  }
  scheduler_.on_step_done(plan);
  {
    // The step's counters first, so whoever sees a finished event also sees the tokens that led to it.
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.num_steps;
    stats_.peak_num_running = std::max(stats_.peak_num_running, num_running);
    stats_.num_prompt_tokens += num_new_prompt_tokens;
    stats_.num_generation_tokens += num_sampled;
    update_stats_locked();
  }
  for (const Ending& e : endings) finish_sequence(*e.seq, e.reason, true);
}

void Engine::update_stats_locked() {
  stats_.num_running = scheduler_.num_running();
  stats_.num_waiting = scheduler_.num_waiting();
  stats_.num_preemptions = scheduler_.num_preemptions();
  stats_.kv = kv_manager_.stats();
  stats_.kv_usage = kv_manager_.usage();
}

}  // namespace pagoda
