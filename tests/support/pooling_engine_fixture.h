// pooling_engine_fixture: what the engine tests of pooling models (an encoder, a decoder reranker) share: an Engine
// sized for prefill-only pooling requests, such a request, and their oracle, the final hidden states of one direct
// forward pass over a prompt alone. Header-only test support; no product code.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine.h"
#include "kv/kv_storage.h"
#include "loader/loaded_model.h"
#include "model/batch_view.h"
#include "model/model.h"
#include "model/workspace.h"

namespace pagoda::testing {

struct PoolingEngineSizes {
  int32_t max_seq_len = 64;
  int32_t num_blocks = 64;               // of 4 positions
  std::optional<KvCacheTypes> kv_types;  // unset: EngineConfig's default
};

// Up to 4 sequences, two threads, the prefix cache asked for; nullptr (a failed expectation) when creation fails.
inline std::unique_ptr<Engine> make_pooling_engine(const LoadedModel& m, int32_t max_batched_tokens,
                                                   const PoolingEngineSizes& sizes = {}) {
  EngineConfig c;
  c.max_seq_len = sizes.max_seq_len;
  c.scheduler.max_num_seqs = 4;
  c.scheduler.max_batched_tokens = max_batched_tokens;
  c.kv.num_blocks = sizes.num_blocks;
  c.kv.block_size = 4;
  c.kv.enable_prefix_cache = true;
  c.num_threads = 2;
  c.pooling = true;
  if (sizes.kv_types) c.kv_types = *sizes.kv_types;
  auto engine = Engine::create(*m.model, *m.tokenizer, c);
  EXPECT_TRUE(engine.ok()) << engine.error();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

inline GenerateRequest pooling_request(const std::vector<TokenId>& prompt, Pooling method) {
  GenerateRequest r;
  r.prompt = prompt;
  r.prefill_only = true;
  r.pooling = method;
  return r;
}

// The final hidden states of prompt rows `rows` from one forward call over the prompt alone, on one thread, its K/V
// in an f32 cache of 16-position blocks.
inline std::vector<std::vector<float>> direct_hidden_rows(const Model& model, const std::vector<TokenId>& prompt,
                                                          const std::vector<int32_t>& rows) {
  constexpr int32_t kBlockSize = 16;
  const int32_t n = int32_t(prompt.size()), num_blocks = (n + kBlockSize - 1) / kBlockSize;
  ThreadPool pool(1);
  KvStorage kv(model.config().kv_shape(), num_blocks, kBlockSize);
  Workspace ws(model.config(), n, num_blocks * kBlockSize, 1, 1, int32_t(rows.size()));
  std::vector<BlockId> table(static_cast<size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<Pos> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  const std::vector<int32_t> slots(positions.begin(), positions.end()), starts = {0, n}, lens = {n};
  BatchView batch;
  batch.tokens = prompt;
  batch.positions = positions;
  batch.slot_ids = slots;
  batch.seq_starts = starts;
  batch.context_lens = lens;
  batch.block_tables = BlockTableView{table.data(), 1, num_blocks};
  batch.hidden_rows = rows;
  const LogitsView out = model.forward(batch, kv.view(), ws, pool);
  std::vector<std::vector<float>> hidden;
  for (int32_t r = 0; r < int32_t(rows.size()); ++r)
    hidden.emplace_back(out.hidden_row(r).begin(), out.hidden_row(r).end());
  return hidden;
}

}  // namespace pagoda::testing
