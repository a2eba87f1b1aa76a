// The calibration pass: chunks of the text through the model, logits for every row.
#include "eval/calibration_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "eval/chunk_runner.h"

namespace pagoda::eval {

Result<CalibrationPassReport> run_calibration_pass(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                                   ThreadPool& pool, int32_t ctx, int32_t max_batch) {
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
  ChunkRunner runner(model, ctx, max_batch, KvDType::kF32, pool.num_threads());
  CalibrationPassReport report;
  std::vector<TokenId> chunk;
  for (size_t start = 0; start < tokens.size(); start += size_t(ctx - 1)) {
    const size_t len = std::min(tokens.size() - start, size_t(ctx - 1));
    chunk.assign(1, bos_id);
    chunk.insert(chunk.end(), tokens.begin() + int64_t(start), tokens.begin() + int64_t(start + len));
    const int32_t n = int32_t(chunk.size());
    for (int32_t begin = 0; begin < n; begin += max_batch)
      runner.run(chunk, begin, std::min(n, begin + max_batch), /*first_scored=*/0, pool);
    ++report.num_chunks;
    report.num_tokens += n;
  }
  return report;
}

}  // namespace pagoda::eval
