// The single-sequence generation loop.
#include "engine/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "engine/stop_checker.h"
#include "sampling/sampler.h"
#include "tokenizer/stream_decoder.h"

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 16;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t num_blocks_for(int32_t num_tokens) { return (num_tokens + kBlockSize - 1) / kBlockSize; }

}  // namespace

double GenerationResult::tpot_ms() const {
  if (token_times_us.size() < 2) return 0.0;
  return double(token_times_us.back() - token_times_us.front()) / 1000.0 / double(token_times_us.size() - 1);
}

double GenerationResult::tokens_per_second() const {
  const double tpot = tpot_ms();
  return tpot > 0.0 ? 1000.0 / tpot : 0.0;
}

Generator::Generator(const Model& model, const Tokenizer& tokenizer, ThreadPool& pool, int32_t max_seq_len,
                     int32_t max_chunk, KvDType kv_dtype)
    : model_(model),
      tokenizer_(tokenizer),
      pool_(pool),
      max_seq_len_(max_seq_len),
      block_size_(kBlockSize),
      kv_(model.config(), num_blocks_for(max_seq_len), kBlockSize, kv_dtype),
      workspace_(model.config(), std::min(max_chunk, max_seq_len), max_seq_len, 1, pool.num_threads()),
      block_table_(size_t(num_blocks_for(max_seq_len))),
      step_tokens_(size_t(workspace_.max_tokens)),
      step_positions_(size_t(workspace_.max_tokens)),
      step_slots_(size_t(workspace_.max_tokens)) {
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

int64_t Generator::kv_bytes(const ModelConfig& config, int32_t max_seq_len, KvDType kv_dtype) {
  return int64_t(num_blocks_for(max_seq_len)) * KvStorage::bytes_per_block_for(config, kBlockSize, kv_dtype);
}

Status Generator::check_prompt(std::span<const TokenId> prompt) const {
  const int32_t num_prompt = int32_t(prompt.size());
  if (num_prompt == 0) return make_error("the prompt is empty (no tokens)");
  if (num_prompt >= max_seq_len_)
    return make_error(fmt::format(
        "the prompt is {} tokens but the context holds {} (max_seq_len); shorten the prompt or raise --max-seq-len",
        num_prompt, max_seq_len_));
  for (TokenId t : prompt)
    if (t < 0 || t >= model_.config().vocab_size)
      return make_error(
          fmt::format("prompt token id {} is outside the vocabulary (0..{})", t, model_.config().vocab_size - 1));
  return Status();
}

Result<GenerationResult> Generator::generate(std::span<const TokenId> prompt, const SamplingParams& params,
                                             const std::function<void(std::string_view)>& on_text) {
  PAGODA_RETURN_IF_ERROR(check_prompt(prompt));
  const int32_t num_prompt = int32_t(prompt.size());

  GenerationResult result;
  result.num_prompt_tokens = num_prompt;
  const int64_t start_us = now_us();
  const KvCacheView kv = kv_.view();
  Sampler sampler(params);
  StreamDecoder decoder(tokenizer_, prompt.back());
  StopChecker stop_checker(params.stop);

  // One sequence per step, so seq_starts = {0, n} and the block table is the identity.
  int32_t seq_starts[2] = {0, 0};
  int32_t context_len = 0;
  int32_t logits_row = 0;
  auto run_step = [&](std::span<const TokenId> step_tokens, Pos first_pos) {
    const int32_t n = int32_t(step_tokens.size());
    std::copy(step_tokens.begin(), step_tokens.end(), step_tokens_.begin());
    for (int32_t i = 0; i < n; ++i) {
      const Pos p = first_pos + i;
      step_positions_[size_t(i)] = p;
      step_slots_[size_t(i)] = block_table_[size_t(p / block_size_)] * block_size_ + p % block_size_;
    }
    seq_starts[1] = n;
    context_len = first_pos + n;
    logits_row = n - 1;
    BatchView batch;
    batch.tokens = std::span<const TokenId>(step_tokens_).first(size_t(n));
    batch.positions = std::span<const Pos>(step_positions_).first(size_t(n));
    batch.slot_ids = std::span<const int32_t>(step_slots_).first(size_t(n));
    batch.seq_starts = seq_starts;
    batch.context_lens = std::span<const int32_t>(&context_len, 1);
    batch.block_tables = BlockTableView{block_table_.data(), 1, int32_t(block_table_.size())};
    batch.logits_rows = std::span<const int32_t>(&logits_row, 1);
    return model_.forward(batch, kv, workspace_, pool_);
  };

  // Prefill in chunks that fit the workspace; only the last chunk's last row needs logits.
  LogitsView logits;
  for (int32_t done = 0; done < num_prompt;) {
    const int32_t n = std::min(workspace_.max_tokens, num_prompt - done);
    logits = run_step(prompt.subspan(size_t(done), size_t(n)), done);
    done += n;
  }
  result.prefill_us = now_us() - start_us;

  Pos pos = num_prompt;
  bool hit_stop_string = false;
  for (;;) {
    if (logits_observer_) logits_observer_(logits.row(0));  // before sample(), which edits the row
    const TokenId next = sampler.sample(logits.row(0), prompt, result.output_tokens);
    const int64_t sampled_us = now_us() - start_us;
    if (result.output_tokens.empty()) result.ttft_us = sampled_us;
    result.output_tokens.push_back(next);
    result.token_times_us.push_back(sampled_us);
    if (tokenizer_.ends_generation(next) && !params.ignore_eos) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    StopChecker::Output out = stop_checker.push(decoder.push(next));
    if (!out.text.empty()) on_text(out.text);
    if (out.stopped) {
      result.finish_reason = FinishReason::kStop;
      hit_stop_string = true;
      break;
    }
    // The sequence (prompt + output) holds at most max_seq_len tokens, as vLLM's max_model_len.
    if (int32_t(result.output_tokens.size()) >= params.max_tokens || pos + 1 >= max_seq_len_) {
      result.finish_reason = FinishReason::kLength;
      break;
    }
    logits = run_step(std::span<const TokenId>(&next, 1), pos);
    ++pos;
  }
  if (!hit_stop_string) {
    // Text held back for an incomplete character or a possible stop string is final now.
    StopChecker::Output tail = stop_checker.push(decoder.flush());
    std::string rest = tail.text;
    if (!tail.stopped) rest += stop_checker.flush();
    if (!rest.empty()) on_text(rest);
  }
  result.total_us = now_us() - start_us;
  return result;
}

}  // namespace pagoda
