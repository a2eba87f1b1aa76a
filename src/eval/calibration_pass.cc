// The calibration pass: chunks of the text through the model, logits for every row.
#include "eval/calibration_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "engine/engine.h"

namespace pagoda::eval {

Result<CalibrationPassReport> run_calibration_pass(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                                   int32_t num_threads, int32_t ctx, int32_t max_batch) {
  const ModelConfig& c = model.config();
  if (ctx < 2 || ctx > c.context_length)
    return make_error(
        fmt::format("calibration chunks of {} tokens: must be 2 to the model's context of {}", ctx, c.context_length));
  if (!tokens.empty() && tokens.front() == bos_id) tokens = tokens.subspan(1);
  if (tokens.empty()) return make_error("the calibration text has no tokens");
  for (TokenId t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return make_error(fmt::format("token id {} is outside the model's vocabulary of {}", t, c.vocab_size));
  max_batch = std::min(max_batch, ctx);
  // Each chunk is one request through an Engine, every prompt row's logits asked for, so the classifier sees
  // every row too; the logits themselves are not needed.
  EngineConfig ec;
  ec.max_seq_len = ctx + 1;  // room for the token each request samples (never computed)
  ec.rope_context = ctx;
  ec.kv.block_size = 16;
  ec.kv.num_blocks = (ec.max_seq_len + ec.kv.block_size - 1) / ec.kv.block_size;
  ec.kv.enable_prefix_cache = false;
  ec.scheduler.max_num_seqs = 1;
  ec.scheduler.max_batched_tokens = max_batch;
  ec.num_threads = num_threads;
  ec.prompt_logits = true;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model, ec));
  CalibrationPassReport report;
  for (size_t start = 0; start < tokens.size(); start += size_t(ctx - 1)) {
    const size_t len = std::min(tokens.size() - start, size_t(ctx - 1));
    GenerateRequest r;
    r.prompt.assign(1, bos_id);
    r.prompt.insert(r.prompt.end(), tokens.begin() + int64_t(start), tokens.begin() + int64_t(start + len));
    r.prefill_only = true;
    r.prompt_logits_start = 0;
    const int32_t n = int32_t(r.prompt.size());
    PAGODA_ASSIGN_OR_RETURN(RequestHandle h, engine->submit(std::move(r)));
    h.stream->wait_all();
    ++report.num_chunks;
    report.num_tokens += n;
  }
  return report;
}

}  // namespace pagoda::eval
