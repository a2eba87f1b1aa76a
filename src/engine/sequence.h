// Sequence: one request's life inside the scheduler: its tokens (prompt then output), its KV state, how it
// samples, where it must end, the raw logits or pooled hidden state it asked for, its fork relation (n samples of one
// prompt), and its timing. No text: detokenizing, stop strings and the client's stream belong to the OutputProcessor.
// Owned by the Scheduler, which moves it between its waiting and running lists; the engine borrows pointers to it
// within one step. Invariants: kv.num_computed_tokens <= tokens.size() (the tokens past it are what the next steps
// compute); num_tokens() <= max_num_tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/generate_request.h"
#include "engine/reasoning_gate.h"
#include "engine/request_timing.h"
#include "grammar/grammar_matcher.h"
#include "kv/seq_kv_state.h"
#include "sampling/sampler.h"
#include "sampling/token_logprobs.h"
#include "spec/draft_length.h"

namespace pagoda {

enum class SeqStatus : uint8_t {
  kWaiting,
  kRunning,
  kAwaitingFork,  // one of n samples of a prompt: it starts as a copy of its fork parent once that has computed it
};

struct Sequence {
  // `max_seq_len`: the context; the sequence ends by length at min(prompt + max_tokens, max_seq_len) tokens (a
  // prefill-only one ends at its prompt's end).
  Sequence(RequestId request_id, GenerateRequest request, int32_t block_size, int32_t max_seq_len, uint64_t arrival_idx,
           int64_t arrival_us);

  int32_t num_tokens() const { return int32_t(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  // Tokens that have no KV yet: the rest of the prompt while prefilling, 1 while decoding.
  int32_t num_uncomputed_tokens() const { return num_tokens() - kv.num_computed_tokens; }
  std::span<const TokenId> prompt() const { return std::span<const TokenId>(tokens).first(size_t(num_prompt_tokens)); }
  std::span<const TokenId> output() const {
    return std::span<const TokenId>(tokens).subspan(size_t(num_prompt_tokens));
  }
  // The first prompt position whose logits row the request needs: prompt_logits_start for raw rows, 0 for
  // prompt logprobs (row i scores token i + 1), -1 for neither.
  int32_t prompt_rows_start() const {
    return prompt_logits_start >= 0 ? prompt_logits_start : prompt_logprobs >= 0 ? 0 : -1;
  }
  // Whether the forward pass must give the logits row of position `pos` to prompt_logits (or prompt_logprobs):
  // rows from prompt_rows_start() to the prompt's end, each once (a recompute after preemption skips those
  // collected).
  bool wants_prompt_logits_row(Pos pos) const {
    const int32_t start = prompt_rows_start();
    return start >= 0 && pos < num_prompt_tokens && pos >= start + num_prompt_logits_rows;
  }
  // Whether the forward pass must give the final hidden state of position `pos` to `pooled`: each row the
  // pooling reads, once (a recompute after preemption skips those collected).
  bool wants_hidden_row(Pos pos) const {
    switch (pooling) {
      case Pooling::kNone: return false;
      case Pooling::kLast: return pos == num_prompt_tokens - 1 && num_pooled_rows == 0;
      case Pooling::kRank: return pos == (rank_reads_last ? num_prompt_tokens - 1 : 0) && num_pooled_rows == 0;
      case Pooling::kCls: return pos == 0 && num_pooled_rows == 0;
      case Pooling::kMean: return pos < num_prompt_tokens && pos >= num_pooled_rows;
    }
    return false;
  }
  // Every row of the prompt must be computed (no prefix-cache hit): prompt logits, mean, CLS and rank pooling.
  bool needs_every_prompt_row() const {
    return prompt_rows_start() >= 0 || pooling == Pooling::kMean || pooling == Pooling::kCls ||
           pooling == Pooling::kRank;
  }

  RequestId request_id;
  int32_t priority;
  uint64_t arrival_idx;  // submission order, the FCFS tie-break
  SamplingParams sampling;
  std::vector<TokenId> tokens;  // prompt, then output
  int32_t num_prompt_tokens;
  int32_t max_num_tokens;  // min(prompt + max_tokens, max_seq_len), or the prompt when prefill-only
  SeqKvState kv;
  SeqStatus status = SeqStatus::kWaiting;
  int32_t num_cached_tokens = 0;  // prompt tokens the prefix cache served at the first admission
  // A hybrid model's: the end of the cached block chain its last admission's lookup found past the deepest state
  // snapshot (PrefixHit::num_chain_tokens). A prompt chunk ends there so that the state there is snapshotted: the
  // prefix other prompts share. 0: none.
  int32_t snapshot_pos = 0;
  Sampler sampler;
  // The request's output constraint (GenerateRequest::grammar): where the output stands in the grammar. It
  // advances with each sampled token and survives preemption (a recompute samples nothing).
  std::optional<grammar::GrammarMatcher> grammar;
  ReasoningGateState reasoning_gate;  // whether the grammar holds yet (GenerateRequest::reasoning_gate)
  RequestTiming timing;

  // Speculative decoding: the drafts this step verifies after the last token (positions num_tokens() on), set by
  // the scheduler when it schedules the step and cleared by its update(). Their KV is written by the step and
  // rolled back for those the target model rejects.
  std::vector<TokenId> draft_tokens;
  std::vector<float> draft_chances;  // the drafter's chance for each draft (Drafter::propose), or empty
  DraftLengthChooser draft_length;   // how many drafts a step verifies (adaptive length), and what it learned

  // Raw logits the request asked for (GenerateRequest::prompt_logits_start, output_logits).
  int32_t prompt_logits_start;
  bool output_logits;
  std::vector<float> prompt_logits;    // f32 [num_prompt_logits_rows, vocab]: handed out with the first token
  int32_t num_prompt_logits_rows = 0;  // prompt rows collected (into prompt_logits or prompt_token_logprobs)
  int32_t prompt_logprobs;             // GenerateRequest::prompt_logprobs: alternatives per prompt token, -1: none
  std::vector<TokenLogprobs> prompt_token_logprobs;  // [rows collected that score a prompt token]: with the first token
  // A prefill-only request (GenerateRequest::prefill_only): it samples nothing and ends once its prompt is
  // computed; a pooling one (always prefill-only) pools its prompt's final hidden states.
  bool prefill_only;
  Pooling pooling;
  // Rank pooling's row: the last prompt token's (a decoder reranker, Model::rank_reads_last_token) or the first's.
  bool rank_reads_last = false;
  std::vector<float> pooled;  // f32 [dim]: the sum (mean) or the row (last, CLS) of the rows collected so far
  int32_t num_pooled_rows = 0;

  // n samples of one prompt: a fork parent computes the prompt once and samples nothing itself; the step that
  // computes its last prompt token gives each of `forks` its first token from the parent's logits row, and the
  // scheduler forks the parent's blocks into them (shared until written) and drops the parent.
  std::vector<Sequence*> forks;     // a fork parent's samples, status kAwaitingFork; empty for any other sequence
  Sequence* fork_parent = nullptr;  // a sample's parent until the fork
  bool is_fork_parent() const { return !forks.empty(); }
};

}  // namespace pagoda
