// EngineConfig: everything an Engine is built with: context length, scheduling, the KV pool, threads and the
// admission limit. A plain value; Engine::create checks it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/scheduler_config.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_cache_view.h"

namespace pagoda {

class Model;
class NgramTable;

// Speculative decoding: who proposes the drafts. How many a step verifies is SchedulerConfig's
// num_speculative_tokens (at least 1 with a method, 0 without).
enum class SpecMethod : uint8_t {
  kNone,
  kNgram,       // prompt lookup (spec/ngram_drafter.h)
  kDraftModel,  // a smaller model's greedy continuation (spec/draft_model_drafter.h)
};

struct SpecDecodeConfig {
  SpecMethod method = SpecMethod::kNone;
  int32_t ngram_min = 1;  // kNgram: the shortest suffix looked up
  int32_t ngram_max = 4;  // kNgram: the longest, tried first
  // kNgram: n-gram tables behind prompt lookup (spec/ngram_drafter.h): a corpus's (borrowed, must outlive the
  // engine; may be null) and the bound on n-grams learned from finished outputs (0: none learned).
  const NgramTable* ngram_corpus = nullptr;
  int64_t ngram_history = 0;
  // kDraftModel: the model (borrowed; it must outlive the engine and share the target's vocabulary) and its own
  // KV pool, in blocks of the engine's block size (0: what fits in the target pool's bytes, at most its block
  // count, and one sequence at least), of its own K/V types (llama.cpp's -ctkd/-ctvd; f16 as there).
  const Model* draft_model = nullptr;
  int32_t draft_kv_blocks = 0;
  KvCacheTypes draft_kv_types = {};
};

inline constexpr int32_t kDefaultMaxQueue = 4096;

struct EngineConfig {
  int32_t max_seq_len = 0;  // prompt + output tokens of one sequence
  // The context a sequence is configured for (--max-seq-len, perplexity's --ctx); 0 = max_seq_len. max_seq_len
  // may differ (run sizes its one sequence to the request, perplexity leaves room for the token a request
  // samples): a RoPE that depends on the context (LongRoPE's factor set) reads this one, so that such sizing never
  // changes a logit.
  int32_t rope_context = 0;
  KvCacheTypes kv_types;  // kv_cache.dtype / type_k / type_v (default f16)
  SchedulerConfig scheduler;
  KvCacheManager::Options kv;            // num_blocks, block_size, prefix cache
  int32_t max_queue = kDefaultMaxQueue;  // waiting requests beyond which submit() refuses with kResourceExhausted
  int32_t num_threads = 0;               // the forward pass's thread pool; 0 = one per core
  // Requests may ask for prompt logits (GenerateRequest::prompt_logits_start): the workspace then holds a logits
  // row for every token of a step (vocab floats each) instead of one per sequence.
  bool prompt_logits = false;
  // Requests may be pooling requests (GenerateRequest::pooling, embeddings): the workspace then holds a final
  // hidden-state row for every token of a step (dim floats each). Not over --tp/--pp ranks.
  bool pooling = false;
  // False: only pooling requests will come (pagoda embed): nothing decodes, so there is no prompt pacing to
  // calibrate at creation (Engine::calibrate_step_time).
  bool decodes = true;
  SpecDecodeConfig spec;
};

inline int32_t rope_context(const EngineConfig& c) { return c.rope_context > 0 ? c.rope_context : c.max_seq_len; }

// Rows of the forward's workspace: when prefill is not chunked a step may hold one whole prompt besides the
// decodes of every other running sequence. With prompt_logits, a logits row (vocab floats) for each.
inline int32_t step_token_capacity(const EngineConfig& c) {
  return c.scheduler.chunked_prefill
             ? c.scheduler.max_batched_tokens
             : std::max(c.scheduler.max_batched_tokens, c.max_seq_len + c.scheduler.max_num_seqs);
}

}  // namespace pagoda
