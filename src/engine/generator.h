// Generator: runs one prompt to completion on one sequence: chunked prefill, then decode one token per step,
// streaming text as it becomes final. The single-stream loop that `pagoda run` uses until the continuous-
// batching Engine lands; it owns its KV storage, workspace and timings, and borrows the model and tokenizer.
#pragma once

#include <pagoda/request.h>
#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "model/model.h"
#include "sampling/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

struct GenerationResult {
  std::vector<TokenId> output_tokens;
  FinishReason finish_reason = FinishReason::kLength;
  int32_t num_prompt_tokens = 0;
  int64_t prefill_us = 0;               // prompt processing, up to the first token's logits
  int64_t ttft_us = 0;                  // start to first token sampled
  int64_t total_us = 0;                 // start to the end of generation
  std::vector<int64_t> token_times_us;  // [output_tokens] start to the moment each token was sampled

  // Mean time per output token after the first (first to last token over n - 1), in ms; 0 with fewer than two.
  double tpot_ms() const;
  double tokens_per_second() const;  // decode rate after the first token
};

class Generator {
 public:
  // max_seq_len: tokens the sequence may hold (prompt + output); max_chunk: prompt tokens per forward.
  // `pool` runs every forward call; it belongs to the caller and must outlive the generator.
  Generator(const Model& model, const Tokenizer& tokenizer, ThreadPool& pool, int32_t max_seq_len,
            int32_t max_chunk = 256, KvDType kv_dtype = KvDType::kF32);

  // Errors for a prompt this generator cannot run: empty, ids outside the vocabulary, or no room left in the
  // context for a new token.
  Status check_prompt(std::span<const TokenId> prompt) const;
  // `on_text` receives each piece of output text once it is final (complete UTF-8, past any stop string).
  // Errors: an empty prompt or one that leaves no room in the context.
  Result<GenerationResult> generate(std::span<const TokenId> prompt, const SamplingParams& params,
                                    const std::function<void(std::string_view)>& on_text);

  // Shown each step's logits row before sampling (for `pagoda run --logits-out`); empty: none.
  void set_logits_observer(std::function<void(std::span<const float>)> observer) {
    logits_observer_ = std::move(observer);
  }

  int32_t max_seq_len() const { return max_seq_len_; }
  // Bytes of f32 K/V a generator of `max_seq_len` allocates for `config` (so a caller can refuse what
  // cannot fit before allocating it).
  static int64_t kv_bytes(const ModelConfig& config, int32_t max_seq_len, KvDType kv_dtype = KvDType::kF32);

 private:
  const Model& model_;
  const Tokenizer& tokenizer_;
  ThreadPool& pool_;
  int32_t max_seq_len_;
  int32_t block_size_;
  KvStorage kv_;
  Workspace workspace_;
  std::vector<BlockId> block_table_;  // identity: logical block j is physical block j
  // Step inputs, [workspace max_tokens] each, reused every step.
  std::vector<TokenId> step_tokens_;
  std::vector<Pos> step_positions_;
  std::vector<int32_t> step_slots_;
  std::function<void(std::span<const float>)> logits_observer_;
};

}  // namespace pagoda
