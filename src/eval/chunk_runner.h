// ChunkRunner: one model's pass over one chunk of text at a time, each chunk a fresh sequence in its own KV
// blocks (identity block table) with its own workspace. Shared by the perplexity evaluation and the AWQ
// calibration pass. Owns its KV storage and workspace; borrows the model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "core/types.h"
#include "kv/kv_storage.h"
#include "model/model.h"

namespace pagoda::eval {

class ChunkRunner {
 public:
  // Chunks of at most `ctx` tokens, run in forward calls of at most `max_batch` tokens.
  ChunkRunner(const Model& model, int32_t ctx, int32_t max_batch, KvDType kv_dtype, int32_t num_threads);

  // Runs chunk[begin, end) after chunk[0, begin) is in the cache (end - begin <= max_batch, end <= ctx);
  // returns the logits of the rows at chunk positions >= first_scored, in order.
  LogitsView run(std::span<const TokenId> chunk, int32_t begin, int32_t end, int32_t first_scored, ThreadPool& pool);

 private:
  static constexpr int32_t kBlockSize = 16;
  const Model& model_;
  KvStorage kv_;
  Workspace workspace_;
  std::vector<BlockId> table_;
  std::vector<Pos> positions_;
  std::vector<int32_t> slots_;
  std::vector<int32_t> rows_;
};

}  // namespace pagoda::eval
