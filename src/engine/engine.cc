// The step loop and the thread-safe front of the engine.
#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/check.h"
#include "engine/engine_plan.h"
#include "grammar/compiled_grammar.h"
#include "model/single_sequence_batch.h"
#include "sampling/token_logprobs.h"
#include "spec/draft_model_drafter.h"
#include "spec/ngram_drafter.h"

namespace pagoda {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// Logits rows of a step: one per sampling sequence (one per position when it verifies drafts), or one per token
// when prompt rows may be asked for.
int32_t logits_row_capacity(const EngineConfig& c) {
  if (c.prompt_logits) return step_token_capacity(c);
  return std::min(step_token_capacity(c), c.scheduler.max_num_seqs * (1 + c.scheduler.num_speculative_tokens));
}

// Tokens a draft model's proposal may see: a whole sequence and the drafts after it.
int32_t draft_max_context(const EngineConfig& c) { return c.max_seq_len + c.scheduler.num_speculative_tokens; }

// Hidden-state rows of a step: one per token when pooling requests are allowed (mean pooling reads every row).
int32_t hidden_row_capacity(const EngineConfig& c) { return c.pooling ? step_token_capacity(c) : 0; }

// The draft model's KV pool (of its own K/V types): as asked, else the blocks that fit in the bytes of the target's
// pool, at most its block count (the tokens the engine can hold), and at least one whole sequence. So by default the
// KV memory is at most twice what the engine was planned with (the pool sizing knows nothing of the draft).
int32_t draft_kv_blocks(const EngineConfig& c, const Model& target) {
  if (c.spec.draft_kv_blocks > 0) return c.spec.draft_kv_blocks;
  const int64_t target_bytes = int64_t(c.kv.num_blocks) *
                               KvStorage::bytes_per_block_for(target.config().kv_shape(), c.kv.block_size, c.kv_types);
  const int64_t draft_block_bytes =
      KvStorage::bytes_per_block_for(c.spec.draft_model->config().kv_shape(), c.kv.block_size, c.spec.draft_kv_types);
  const int64_t fit = std::min<int64_t>(c.kv.num_blocks, target_bytes / std::max<int64_t>(1, draft_block_bytes));
  return std::max(int32_t(fit), DraftModelDrafter::min_blocks(draft_max_context(c), c.kv.block_size));
}

std::unique_ptr<Drafter> make_drafter(const EngineConfig& c, const Model& target, ThreadPool& pool) {
  switch (c.spec.method) {
    case SpecMethod::kNone: return nullptr;
    case SpecMethod::kNgram:
      return std::make_unique<NgramDrafter>(NgramDrafter::Options{.min_ngram = c.spec.ngram_min,
                                                                  .max_ngram = c.spec.ngram_max,
                                                                  .corpus = c.spec.ngram_corpus,
                                                                  .history_entries = c.spec.ngram_history});
    case SpecMethod::kDraftModel:
      return std::make_unique<DraftModelDrafter>(*c.spec.draft_model, pool,
                                                 DraftModelDrafter::Options{.num_blocks = draft_kv_blocks(c, target),
                                                                            .block_size = c.kv.block_size,
                                                                            .kv_types = c.spec.draft_kv_types,
                                                                            .max_context = draft_max_context(c),
                                                                            .rope_context = rope_context(c)});
  }
  return nullptr;
}

// The manager's options: a hybrid model's sequences each hold a recurrent-state slot; its prefix cache needs state
// snapshots (kv_cache_manager.h).
KvCacheManager::Options kv_manager_options(const EngineConfig& c, const ModelConfig& model) {
  KvCacheManager::Options o = c.kv;
  o.num_state_slots = std::max(o.num_state_slots, state_slots_needed(model, c.scheduler.max_num_seqs));
  if (o.num_state_slots == 0) o.num_state_snapshots = 0;
  // Speculative decoding rolls a hybrid model's state back to a backup taken before each verification.
  o.state_backups = o.num_state_slots > 0 && c.spec.method != SpecMethod::kNone;
  // An encoder's K/V rows depend on the whole prompt: no other prompt may reuse them.
  if (model.encoder) o.enable_prefix_cache = false;
  return o;
}

SchedulerConfig scheduler_config_of(const EngineConfig& c, const ModelConfig& model) {
  SchedulerConfig s = c.scheduler;
  s.whole_prompts = model.encoder;
  return s;
}

std::vector<TokenId> end_of_generation_ids(const Tokenizer* tokenizer) {
  std::vector<TokenId> ids;
  if (tokenizer != nullptr)
    for (TokenId t = 0; t < tokenizer->vocab_size(); ++t)
      if (tokenizer->ends_generation(t)) ids.push_back(t);
  return ids;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const Tokenizer& tokenizer,
                                               const EngineConfig& config) {
  if (tokenizer.vocab_size() != model.config().vocab_size)
    return make_error(
        fmt::format("the tokenizer has {} tokens, the model {}", tokenizer.vocab_size(), model.config().vocab_size));
  return create_impl(model, &tokenizer, config);
}

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const EngineConfig& config) {
  return create_impl(model, nullptr, config);
}

Result<std::unique_ptr<Engine>> Engine::create_impl(const Model& model, const Tokenizer* tokenizer,
                                                    const EngineConfig& config) {
  if (config.max_seq_len < 2)
    return make_error(fmt::format("max_seq_len must be at least 2, got {}", config.max_seq_len));
  if (config.rope_context < 0)
    return make_error(fmt::format("rope_context must be >= 0 (0 = max_seq_len), got {}", config.rope_context));
  if (config.kv.block_size < 1) return make_error("kv_cache.block_size must be positive");
  if (const std::string unfit = KvStorage::kv_types_fit(model.config().kv_shape(), config.kv_types); !unfit.empty())
    return make_error(unfit, StatusCode::kInvalidArgument);
  if (config.scheduler.max_num_seqs < 1) return make_error("batch_size must be at least 1");
  if (config.scheduler.max_batched_tokens < 1) return make_error("--max-batched-tokens must be at least 1");
  if (config.scheduler.max_batched_tokens < config.scheduler.max_num_seqs)
    return make_error(
        fmt::format("--max-batched-tokens ({}) must be at least batch_size ({}): every running "
                    "sequence needs a token of the step's budget",
                    config.scheduler.max_batched_tokens, config.scheduler.max_num_seqs));
  if (config.max_queue < 1) return make_error("--max-queue must be at least 1");
  if (!(config.scheduler.tpot_slo_ms >= 0.0) || !(config.scheduler.ttft_slo_ms >= 0.0))
    return make_error("latency targets (--tpot-slo, --ttft-slo) must be >= 0 ms");
  if (config.spec.method == SpecMethod::kNone && config.scheduler.num_speculative_tokens != 0)
    return make_error("speculative tokens without a speculative method (--spec)");
  if (config.spec.method != SpecMethod::kNone &&
      (config.scheduler.num_speculative_tokens < 1 || config.scheduler.num_speculative_tokens > 64))
    return make_error(fmt::format("--spec-tokens must be in [1, 64], got {}", config.scheduler.num_speculative_tokens));
  if (config.spec.method == SpecMethod::kNgram &&
      (config.spec.ngram_min < 1 || config.spec.ngram_min > config.spec.ngram_max || config.spec.ngram_max > 64))
    return make_error(fmt::format("n-gram sizes must satisfy 1 <= min <= max <= 64, got {}..{}", config.spec.ngram_min,
                                  config.spec.ngram_max));
  if (config.spec.ngram_history < 0) return make_error("a negative n-gram history");
  if (config.spec.method != SpecMethod::kNgram &&
      (config.spec.ngram_corpus != nullptr || config.spec.ngram_history != 0))
    return make_error("n-gram tables without --spec ngram");
  if (config.spec.method == SpecMethod::kDraftModel) {
    if (config.spec.draft_model == nullptr)
      return make_error("speculative decoding with a draft model needs the model");
    if (config.spec.draft_model->config().vocab_size != model.config().vocab_size)
      return make_error(
          fmt::format("the draft model has {} tokens in its vocabulary, the target {}: they must share one",
                      config.spec.draft_model->config().vocab_size, model.config().vocab_size));
    if (const std::string unfit =
            KvStorage::kv_types_fit(config.spec.draft_model->config().kv_shape(), config.spec.draft_kv_types);
        !unfit.empty())
      return make_error(fmt::format("the draft model's {} (--cache-type-k-draft / --cache-type-v-draft)", unfit));
    const int32_t least = DraftModelDrafter::min_blocks(draft_max_context(config), config.kv.block_size);
    if (config.spec.draft_kv_blocks != 0 && config.spec.draft_kv_blocks < least)
      return make_error(fmt::format("the draft KV pool needs at least {} blocks (one sequence of {} tokens), got {}",
                                    least, draft_max_context(config), config.spec.draft_kv_blocks));
  }
  if (config.spec.draft_model != nullptr && config.spec.draft_model->config().has_recurrent_state())
    return make_error("a hybrid model cannot be the draft model", StatusCode::kInvalidArgument);
  if (config.kv.num_blocks < 1)
    return make_error(fmt::format("the KV pool has {} blocks; give it some (--kv-blocks) or memory (--kv-memory)",
                                  config.kv.num_blocks));
  return std::unique_ptr<Engine>(new Engine(model, tokenizer, config));
}

Engine::Engine(const Model& model, const Tokenizer* tokenizer, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      start_ns_(steady_ns()),
      pool_(config.num_threads),
      kv_storage_(model.config().kv_shape(), config.kv.num_blocks, config.kv.block_size, config.kv_types),
      kv_manager_(kv_manager_options(config, model.config())),
      state_storage_(model.config().state_floats_per_seq(), kv_manager_.num_state_storage_slots()),
      drafter_(make_drafter(config, model, pool_)),
      end_of_generation_ids_(end_of_generation_ids(tokenizer)),
      scheduler_(scheduler_config_of(config, model.config()), kv_manager_, end_of_generation_ids_, drafter_.get()),
      output_(tokenizer),
      workspace_(model.config(), step_token_capacity(config), config.max_seq_len, logits_row_capacity(config),
                 pool_.num_threads(), hidden_row_capacity(config)),
      batch_builder_(step_token_capacity(config), config.scheduler.max_num_seqs,
                     ceil_div(config.max_seq_len, config.kv.block_size), logits_row_capacity(config),
                     hidden_row_capacity(config)),
      draft_verifier_(model.config().vocab_size),
      raw_row_(size_t(model.config().vocab_size)),
      fork_row_(size_t(model.config().vocab_size)),
      constraints_(model.config().vocab_size, end_of_generation_ids_) {
  workspace_.rope_context = rope_context(config);
  sampled_.reserve(size_t(logits_row_capacity(config)));
  spec_figures_.num_accepted_tokens_per_pos.assign(size_t(config.scheduler.num_speculative_tokens), 0);
  stats_.spec_num_accepted_tokens_per_pos = spec_figures_.num_accepted_tokens_per_pos;
  calibrate_step_time();
  update_stats_locked();  // no other thread yet
  loop_thread_ = std::thread([this] { loop(); });
}

// The automatic prefill budget (prefill_budget.h) paces prompts by a step-time model it fits from the steps it
// sees, and uses a fixed rule until steps of different sizes have run. Fitting it here, from forward passes of 1,
// 16 and 64 tokens (a quarter and all of a smaller step budget; a first one-token pass pays for cold weights; then the
// faster of two passes of each size, so a neighbour's burst does not skew the fit; 163 tokens in all, a few seconds for
// a 7B model on two cores), lets the first concurrent prompts be paced by this machine's figures; the steps that follow
// refine it. Only an engine that paces prompts against decoding streams calibrates (decoding ones, several sequences,
// chunked prefill, the automatic budget). The passes write into blocks taken from the pool and given back unhashed:
// they leave no trace in the cache or in any figure. Best effort: a pass that throws (out of memory) leaves the fixed
// rule in place, and the first real step meets the same failure and reports it.
void Engine::calibrate_step_time() {
  const SchedulerConfig& s = config_.scheduler;
  if (!config_.decodes || model_.config().encoder || s.max_num_seqs < 2 || !s.chunked_prefill ||
      s.max_prefill_tokens_with_decodes != kAutoPrefillCap)
    return;
  const int32_t largest = std::min({step_token_capacity(config_), config_.max_seq_len, 64});
  SeqKvState scratch = kv_manager_.make_seq_state();
  if (largest < 4 || !kv_manager_.allocate_slots(scratch, largest)) return;
  const std::vector<TokenId> tokens(static_cast<size_t>(largest), 0);
  SingleSequenceBatch single;
  try {
    for (const int32_t n : {1, largest / 4, largest}) {
      const BatchView batch = single.view(tokens, scratch.block_table.block_ids(), scratch.block_table.block_size(), 0,
                                          n, scratch.state_slot);
      if (n == 1) model_.forward(batch, cache_view(), workspace_, pool_);  // cold weights
      int64_t fastest_ns = 0;
      for (int pass = 0; pass < 2; ++pass) {
        const int64_t start_ns = steady_ns();
        model_.forward(batch, cache_view(), workspace_, pool_);
        const int64_t took_ns = steady_ns() - start_ns;
        if (pass == 0 || took_ns < fastest_ns) fastest_ns = took_ns;
      }
      scheduler_.record_step_time(n, double(fastest_ns) / 1e3);
    }
  } catch (const std::exception&) {
  }
  kv_manager_.free(scratch);
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
  PAGODA_ASSIGN_OR_RETURN(std::vector<RequestHandle> handles, submit_samples(std::move(request), 1));
  return std::move(handles.front());
}

Result<std::vector<RequestHandle>> Engine::submit_samples(GenerateRequest request, int32_t n) {
  if (n < 1) return make_error(fmt::format("n must be at least 1, got {}", n), StatusCode::kInvalidArgument);
  if (Status valid = check_request(request, n); !valid.ok()) return valid;
  std::vector<RequestHandle> handles;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // One inbox entry per group of at most batch_size samples (enqueue_locked).
    if (Status room = check_queue_room_locked(ceil_div(n, config_.scheduler.max_num_seqs)); !room.ok()) return room;
    enqueue_locked(std::move(request), n, handles);
  }
  wake_.notify_one();
  return handles;
}

Result<std::vector<RequestHandle>> Engine::submit_batch(std::vector<GenerateRequest> requests) {
  for (size_t i = 0; i < requests.size(); ++i)
    if (Status valid = check_request(requests[i], 1); !valid.ok())
      return make_error(fmt::format("request {} of the batch: {}", i, valid.message()), valid.code());
  std::vector<RequestHandle> handles;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status room = check_queue_room_locked(int32_t(requests.size())); !room.ok()) return room;
    for (GenerateRequest& r : requests) enqueue_locked(std::move(r), 1, handles);
  }
  wake_.notify_one();
  return handles;
}

Status Engine::check_request(GenerateRequest& request, int32_t n) const {
  const ModelConfig& mc = model_.config();
  const int32_t num_prompt = int32_t(request.prompt.size());
  if (num_prompt == 0) return make_error("the prompt is empty (no tokens)", StatusCode::kInvalidArgument);
  for (TokenId t : request.prompt)
    if (t < 0 || t >= mc.vocab_size)
      return make_error(fmt::format("prompt token id {} is outside the vocabulary (0..{})", t, mc.vocab_size - 1),
                        StatusCode::kInvalidArgument);
  if (request.prefill_only) {
    if (n != 1 || request.grammar || request.reasoning_gate || request.sampling.logprobs >= 0 || request.output_logits)
      return make_error("a prefill-only request samples nothing: no n > 1, grammar, logprobs or output logits",
                        StatusCode::kInvalidArgument);
    request.sampling = SamplingParams{};  // not read: its defaults stand in for whatever the caller left there
  }
  if (Status valid = request.sampling.validate(); !valid.ok())
    return make_error(valid.message(), StatusCode::kInvalidArgument);
  if (tokenizer_ == nullptr && !request.sampling.stop.empty())
    return make_error("stop strings need text, and this engine has no tokenizer", StatusCode::kInvalidArgument);
  for (const auto& [token, bias] : request.sampling.logit_bias)
    if (token >= mc.vocab_size)
      return make_error(
          fmt::format("logit_bias token id {} is outside the vocabulary (0..{})", token, mc.vocab_size - 1),
          StatusCode::kInvalidArgument);
  for (TokenId token : request.sampling.stop_token_ids)
    if (token >= mc.vocab_size)
      return make_error(
          fmt::format("stop_token_ids has token id {}, outside the vocabulary (0..{})", token, mc.vocab_size - 1),
          StatusCode::kInvalidArgument);
  if (request.grammar) {
    if (tokenizer_ == nullptr)
      return make_error("a grammar needs the tokenizer's text, and this engine has none", StatusCode::kInvalidArgument);
    if (request.grammar->vocabulary().vocab_size() > mc.vocab_size)
      return make_error(fmt::format("the grammar was compiled for a vocabulary of {} tokens, the model has {}",
                                    request.grammar->vocabulary().vocab_size(), mc.vocab_size),
                        StatusCode::kInvalidArgument);
  }
  if (request.reasoning_gate) {
    const ReasoningGate& gate = *request.reasoning_gate;
    if (!request.grammar)
      return make_error("a reasoning gate goes with a grammar (it says where the grammar starts)",
                        StatusCode::kInvalidArgument);
    const auto outside = [&](TokenId t) { return t < 0 || t >= mc.vocab_size; };
    if (gate.end.empty() || std::any_of(gate.end.begin(), gate.end.end(), outside) ||
        (gate.start != ReasoningGate::kNoToken && outside(gate.start)))
      return make_error("a reasoning gate's tokens must be in the vocabulary, with at least one end token",
                        StatusCode::kInvalidArgument);
  }
  if (request.prompt_logits_start >= 0 && !config_.prompt_logits)
    return make_error("this engine was created without prompt logits (EngineConfig::prompt_logits)",
                      StatusCode::kInvalidArgument);
  if (request.prompt_logprobs >= 0 && !config_.prompt_logits)
    return make_error("this engine was created without prompt logprobs (EngineConfig::prompt_logits)",
                      StatusCode::kInvalidArgument);
  if (request.prompt_logprobs >= 0 && request.prompt_logits_start >= 0)
    return make_error("a request asks for prompt logits or prompt logprobs, not both", StatusCode::kInvalidArgument);
  if (request.prompt_logprobs < -1 || request.prompt_logprobs > mc.vocab_size)
    return make_error(
        fmt::format("prompt_logprobs {} is outside -1..{} (the vocabulary)", request.prompt_logprobs, mc.vocab_size),
        StatusCode::kInvalidArgument);
  if (request.prompt_logits_start < -1 || request.prompt_logits_start >= num_prompt)
    return make_error(fmt::format("prompt_logits_start {} is outside the prompt's {} positions",
                                  request.prompt_logits_start, num_prompt),
                      StatusCode::kInvalidArgument);
  if (request.pooling != Pooling::kNone) {
    if (!config_.pooling)
      return make_error("this engine was created without pooling (EngineConfig::pooling)",
                        StatusCode::kInvalidArgument);
    if (!request.prefill_only || request.prompt_logits_start >= 0 || request.prompt_logprobs >= 0)
      return make_error("a pooling request is prefill-only and asks for no prompt logits or logprobs",
                        StatusCode::kInvalidArgument);
    if (request.pooling == Pooling::kRank && model_.num_rank_outputs() == 0)
      return make_error(
          "this model has no classification head (a reranker's cls.output), so it cannot score "
          "query/document pairs",
          StatusCode::kInvalidArgument);
  }
  if (mc.encoder) {
    if (request.pooling == Pooling::kNone)
      return make_error(
          fmt::format("{} is an encoder: it computes embeddings and rerank scores, not text", mc.architecture),
          StatusCode::kInvalidArgument);
    // The whole prompt in one step, within the encoder's position embeddings.
    const int32_t limit = std::min(
        config_.scheduler.chunked_prefill ? config_.scheduler.max_batched_tokens : step_token_capacity(config_),
        mc.context_length);
    if (num_prompt > limit)
      return make_error(
          fmt::format("the input is {} tokens but this encoder computes at most {} at once ({})", num_prompt, limit,
                      limit == mc.context_length ? "its position embeddings" : "--max-batched-tokens"),
          StatusCode::kContextLengthExceeded);
  }
  if (request.prefill_only ? num_prompt > config_.max_seq_len : num_prompt >= config_.max_seq_len)
    return make_error(
        fmt::format("the prompt is {} tokens but the context holds {} (max_seq_len){}; shorten the prompt", num_prompt,
                    config_.max_seq_len, request.prefill_only ? "" : ", with room for at least one new token"),
        StatusCode::kContextLengthExceeded);
  // A sequence alone must be able to reach its end in the pool, or preemption could never make room for it.
  const int32_t max_len =
      request.prefill_only
          ? num_prompt
          : int32_t(std::min<int64_t>(int64_t(num_prompt) + request.sampling.max_tokens, config_.max_seq_len));
  const int32_t blocks_needed = ceil_div(max_len, config_.kv.block_size);
  if (blocks_needed > config_.kv.num_blocks)
    return make_error(fmt::format("prompt + max_tokens needs {} KV blocks but the pool holds {}; lower max_tokens "
                                  "or give the KV cache more memory",
                                  blocks_needed, config_.kv.num_blocks),
                      StatusCode::kInvalidArgument);
  return Status::ok_status();
}

Status Engine::check_queue_room_locked(int32_t num_entries) const {
  if (stopping_) return make_error("the engine is shutting down", StatusCode::kUnavailable);
  if (stats_.num_waiting + int32_t(inbox_.size()) + num_entries > config_.max_queue)
    return make_error(fmt::format("the queue is full ({} requests waiting); retry later", config_.max_queue),
                      StatusCode::kResourceExhausted);
  return Status::ok_status();
}

void Engine::enqueue_locked(GenerateRequest request, int32_t n, std::vector<RequestHandle>& handles) {
  // n > 1: groups of at most batch_size samples (a step must seat a whole group), each prefilled once by a fork
  // parent and waiting as one sequence; sample i of a seeded request draws with seed + i.
  const int32_t group_size = config_.scheduler.max_num_seqs;
  for (int32_t first = 0; first < n; first += group_size) {
    Submission sub;
    if (std::min(n, first + group_size) - first > 1)
      sub.parent = std::make_unique<Sequence>(-next_request_id_, request, config_.kv.block_size, config_.max_seq_len,
                                              next_arrival_idx_++, now_us());
    for (int32_t i = first; i < std::min(n, first + group_size); ++i) {
      GenerateRequest r = request;
      if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + uint64_t(i);
      RequestHandle h;
      h.id = next_request_id_++;
      h.stream = std::make_shared<RequestStream>();
      sub.samples.push_back(std::make_unique<Sequence>(h.id, std::move(r), config_.kv.block_size, config_.max_seq_len,
                                                       next_arrival_idx_++, now_us()));
      sub.samples.back()->rank_reads_last = model_.rank_reads_last_token();
      sub.streams.push_back(h.stream);
      handles.push_back(std::move(h));
    }
    inbox_.push_back(std::move(sub));
  }
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
    if (!scheduler_.has_work()) continue;
    // No exception may end the loop thread (that would end the process): a step that throws (out of memory,
    // say) ends every request in flight, each stream getting its finished "abort" event, and the loop goes on.
    try {
      step();
    } catch (const std::exception& e) {
      fail_all(e.what());
    } catch (...) {
      fail_all("unknown exception");
    }
  }
  take_inbox();
  std::vector<SeqEvent> aborted = scheduler_.abort_all(now_us());
  publish(aborted);
}

void Engine::fail_all(const std::string& what) {
  std::fprintf(stderr, "pagoda: an engine step failed (%s): ending the %d requests in flight\n", what.c_str(),
               scheduler_.num_running() + scheduler_.num_waiting());
  std::fflush(stderr);
  sampled_.clear();
  try {
    kv_manager_.discard_pending_copies();
    std::vector<SeqEvent> aborted = scheduler_.abort_all(now_us());
    publish(aborted);
  } catch (...) {
    // Nothing more can be done for these streams; the loop must still go on.
  }
}

void Engine::take_inbox() {
  std::vector<Submission> arrived;
  std::vector<RequestId> cancels;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    arrived.swap(inbox_);
    cancels.swap(cancels_);
    // stats() counts the inbox as waiting: so do the stats until update_stats_locked() below counts them in the
    // scheduler, or an observer would see an idle engine in between (a benchmark waiting for its streams did).
    stats_.num_waiting += int32_t(arrived.size());
  }
  for (Submission& s : arrived) {
    for (size_t i = 0; i < s.samples.size(); ++i)
      output_.add_request(s.samples[i]->request_id, std::move(s.streams[i]), s.samples[i]->tokens.back(),
                          s.samples[i]->sampling);
    if (s.parent)
      scheduler_.add_group(std::move(s.parent), std::move(s.samples));
    else
      scheduler_.add(std::move(s.samples.front()));
  }
  std::vector<SeqEvent> aborted;
  for (RequestId id : cancels)
    if (std::optional<SeqEvent> e = scheduler_.abort(id, now_us())) aborted.push_back(std::move(*e));
  if (!aborted.empty()) {
    publish(aborted);
  } else if (!arrived.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    update_stats_locked();
  }
}

void Engine::step() {
  const int64_t step_start_us = now_us();
  const bool costed = config_.scheduler.adaptive_num_speculative_tokens && scheduler_.speculative();
  const SchedulePlan& plan = scheduler_.schedule(step_start_us);
  if (plan.empty()) return;
  const int32_t num_running = scheduler_.num_running();
  const int32_t num_used_blocks = kv_manager_.pool().num_used();
  block_copies_.clear();
  for (const BlockCopy& copy : kv_manager_.pending_copies()) {
    kv_storage_.copy_block(copy.src_block_id, copy.dst_block_id);
    block_copies_.push_back(KvBlockCopy{copy.src_block_id, copy.dst_block_id});
  }
  for (const KvCacheManager::StateCopy& copy : kv_manager_.pending_state_copies())
    state_storage_.copy_slot(copy.src_slot, copy.dst_slot);
  kv_manager_.clear_pending_copies();

  BatchView batch = batch_builder_.build(plan);
  batch.block_copies = block_copies_;
  const LogitsView logits = model_.forward(batch, cache_view(), workspace_, pool_);
  const int64_t sampled_us = now_us();
  sample(plan, logits);
  const int32_t num_sampled = int32_t(sampled_.size());
  pool(plan, logits);
  output_.find_stop_strings(sampled_);
  const int32_t num_prefill_tokens = plan.num_prefill_tokens, num_admitted = plan.num_admitted_prompt_tokens;
  const int32_t prefill_budget = plan.prefill_budget;
  scheduler_.record_step_time(plan.num_batched_tokens, double(sampled_us - step_start_us));
  std::vector<SeqEvent>& events = scheduler_.update(plan, sampled_, sampled_us);
  // Decode steps only: drafts ride on decode steps, and a prompt chunk's tokens cost differently (one large step
  // would outweigh many small ones in the fit).
  if (costed && num_prefill_tokens == 0)
    scheduler_.record_step(plan.num_batched_tokens, double(now_us() - step_start_us));
  const StepFigures figures{num_running,        num_used_blocks, num_admitted,
                            num_prefill_tokens, num_sampled,     prefill_budget};
  publish(events, &figures);
  sampled_.clear();
}

void Engine::sample(const SchedulePlan& plan, const LogitsView& logits) {
  sampled_.clear();
  const std::vector<BatchBuilder::LogitsRow>& rows = batch_builder_.logits_rows();
  // The prompt rows scored for prompt_logprobs take a pass or two over the vocabulary each (a 128-token chunk of a
  // 152k vocabulary: tens of ms on one thread, while every stream waits), so they are shared out over the pool
  // first, then collected below in row order.
  const auto scores_prompt_row = [&](size_t r) {
    const Sequence& seq = *plan.seqs[size_t(rows[r].seq_idx)].seq;
    return rows[r].prompt_row && seq.prompt_logits_start < 0 && rows[r].pos + 1 < seq.num_prompt_tokens;
  };
  std::vector<size_t> scored_rows;
  for (size_t r = 0; r < rows.size(); ++r)
    if (scores_prompt_row(r)) scored_rows.push_back(r);
  prompt_scores_.resize(scored_rows.size());
  pool_.parallel_for(int64_t(scored_rows.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const size_t r = scored_rows[size_t(i)];
      const Sequence& seq = *plan.seqs[size_t(rows[r].seq_idx)].seq;
      prompt_scores_[size_t(i)] =
          compute_token_logprobs(logits.row(int32_t(r)), seq.tokens[size_t(rows[r].pos + 1)], seq.prompt_logprobs);
    }
  });
  size_t next_score = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence& seq = *plan.seqs[size_t(rows[r].seq_idx)].seq;
    const std::span<float> row = logits.row(int32_t(r));
    if (rows[r].prompt_row) {
      const Pos pos = rows[r].pos;
      PAGODA_CHECK(pos == seq.prompt_rows_start() + seq.num_prompt_logits_rows,
                   "prompt logits row of position {} out of order", pos);
      if (seq.prompt_logits_start >= 0) {
        seq.prompt_logits.insert(seq.prompt_logits.end(), row.begin(), row.end());
      } else if (pos + 1 < seq.num_prompt_tokens) {  // the last row scores the first output token, not a prompt one
        seq.prompt_token_logprobs.push_back(std::move(prompt_scores_[next_score++]));
      }
      ++seq.num_prompt_logits_rows;
    }
    if (!rows[r].samples) continue;
    if (const int32_t num_drafts = plan.seqs[size_t(rows[r].seq_idx)].num_draft_tokens; num_drafts > 0) {
      // Rows r .. r + num_drafts are this sequence's, in position order.
      const int32_t num_accepted = draft_verifier_.verify(seq, logits, int32_t(r), constraints_, sampled_);
      ++spec_figures_.num_drafts;
      spec_figures_.num_draft_tokens += num_drafts;
      spec_figures_.num_accepted_tokens += num_accepted;
      for (int32_t j = 0; j < num_accepted; ++j) ++spec_figures_.num_accepted_tokens_per_pos[size_t(j)];
      r += size_t(num_drafts);
      continue;
    }
    if (!seq.is_fork_parent()) {
      sample_into(seq, row);
      continue;
    }
    // n samples of one prompt: each draws its first token from its own copy of the parent's row.
    std::copy(row.begin(), row.end(), fork_row_.begin());
    for (Sequence* sample : seq.forks) {
      std::copy(fork_row_.begin(), fork_row_.end(), row.begin());
      sample_into(*sample, row);
    }
  }
}

void Engine::pool(const SchedulePlan& plan, const LogitsView& output) {
  const std::vector<BatchBuilder::HiddenRow>& rows = batch_builder_.hidden_rows();
  PAGODA_CHECK(int32_t(rows.size()) == output.num_hidden_rows, "{} hidden rows asked for, {} computed", rows.size(),
               output.num_hidden_rows);
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence& seq = *plan.seqs[size_t(rows[r].seq_idx)].seq;
    const std::span<const float> row = output.hidden_row(int32_t(r));
    if (seq.pooling == Pooling::kMean) {
      // Position order (a recompute skips the rows already summed), so the sum is the same however it was chunked.
      PAGODA_CHECK(rows[r].pos == seq.num_pooled_rows, "hidden row of position {} out of order", rows[r].pos);
      if (seq.pooled.empty()) seq.pooled.assign(row.size(), 0.0f);
      for (size_t i = 0; i < row.size(); ++i) seq.pooled[i] += row[i];
    } else {
      seq.pooled.assign(row.begin(), row.end());
    }
    ++seq.num_pooled_rows;
  }
  for (const ScheduledSeq& s : plan.seqs) {
    if (!s.completes_prefill) continue;
    Sequence& seq = *s.seq;
    if (seq.pooling != Pooling::kNone) {
      const int32_t expected = seq.pooling == Pooling::kMean ? seq.num_prompt_tokens : 1;
      PAGODA_CHECK(seq.num_pooled_rows == expected, "request {} pooled {} rows of {}", seq.request_id,
                   seq.num_pooled_rows, expected);
      if (seq.pooling == Pooling::kMean)
        for (float& v : seq.pooled) v /= float(seq.num_prompt_tokens);
      if (seq.pooling == Pooling::kRank) {
        // The pooled row (the first token's, or a decoder reranker's last) through the classification head: the
        // vector becomes its scores.
        std::vector<float> scores(size_t(model_.num_rank_outputs()));
        model_.rank(seq.pooled, scores);
        seq.pooled = std::move(scores);
      }
    }
    SampledToken t;
    t.seq = &seq;
    t.completes_prefill = true;
    sampled_.push_back(std::move(t));
  }
}

void Engine::sample_into(Sequence& seq, std::span<float> row) {
  SampledToken t;
  t.seq = &seq;
  const bool keep_raw = seq.sampling.logprobs >= 0 || seq.output_logits;
  if (keep_raw) std::copy(row.begin(), row.end(), raw_row_.begin());  // sample() edits the row
  if (!constraints_.mask_row(seq, seq.num_output_tokens(), row)) {
    t.grammar_dead_end = true;
    sampled_.push_back(std::move(t));
    return;
  }
  t.token = seq.sampler.sample(row, seq.prompt(), seq.output());
  if (!TokenConstraints::accept(seq, t)) {
    t.grammar_dead_end = true;
    sampled_.push_back(std::move(t));
    return;
  }
  if (seq.sampling.logprobs >= 0) t.logprobs = compute_token_logprobs(raw_row_, t.token, seq.sampling.logprobs);
  if (seq.output_logits) t.logits = raw_row_;
  sampled_.push_back(std::move(t));
}

void Engine::publish(std::span<SeqEvent> events, const StepFigures* step) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (step != nullptr) {
      ++stats_.num_steps;
      stats_.peak_num_running = std::max(stats_.peak_num_running, step->num_running);
      stats_.peak_num_used_blocks = std::max(stats_.peak_num_used_blocks, step->num_used_blocks);
      stats_.num_prompt_tokens += step->num_admitted_prompt_tokens;
      stats_.num_prefill_tokens += step->num_prefill_tokens;
      stats_.num_generation_tokens += step->num_sampled;
      if (step->prefill_budget >= 0) {
        ++stats_.num_steps_with_decodes;
        stats_.last_prefill_budget = step->prefill_budget;
        if (step->num_prefill_tokens > 0) ++stats_.num_mixed_steps;
        const auto bucket = std::lower_bound(kPrefillTokensPerStepBounds.begin(), kPrefillTokensPerStepBounds.end(),
                                             step->num_prefill_tokens);
        ++stats_.prefill_tokens_per_decode_step[size_t(bucket - kPrefillTokensPerStepBounds.begin())];
        stats_.prefill_tokens_in_decode_steps += step->num_prefill_tokens;
      }
      stats_.spec_num_drafts += spec_figures_.num_drafts;
      stats_.spec_num_draft_tokens += spec_figures_.num_draft_tokens;
      stats_.spec_num_accepted_tokens += spec_figures_.num_accepted_tokens;
      for (size_t j = 0; j < spec_figures_.num_accepted_tokens_per_pos.size(); ++j) {
        stats_.spec_num_accepted_tokens_per_pos[j] += spec_figures_.num_accepted_tokens_per_pos[j];
        spec_figures_.num_accepted_tokens_per_pos[j] = 0;
      }
      spec_figures_.num_drafts = spec_figures_.num_draft_tokens = spec_figures_.num_accepted_tokens = 0;
    }
    update_stats_locked();
    for (const SeqEvent& e : events) {
      if (!e.finished) continue;
      switch (e.finish_reason) {
        case FinishReason::kStop: ++stats_.num_finished_stop; break;
        case FinishReason::kLength: ++stats_.num_finished_length; break;
        case FinishReason::kAbort: ++stats_.num_finished_abort; break;
      }
    }
  }
  output_.publish(events);
}

void Engine::update_stats_locked() {
  stats_.num_running = scheduler_.num_running();
  stats_.num_waiting = scheduler_.num_waiting();
  stats_.num_preemptions = scheduler_.num_preemptions();
  stats_.kv = kv_manager_.stats();
  stats_.kv_usage = kv_manager_.usage();
  stats_.step_fixed_us = scheduler_.step_cost().fixed_us();
  stats_.step_per_token_us = scheduler_.step_cost().per_token_us();
  stats_.step_time_fixed_us = scheduler_.step_time().fixed_us();
  stats_.step_time_per_token_us = scheduler_.step_time().per_token_us();
}

}  // namespace pagoda
