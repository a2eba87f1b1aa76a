// chunked_prompt_logits: one prompt through Model::forward in calls of at most `chunk` tokens into one sequence's
// blocks (in order, or in reverse so the cache is not laid out in order), a hybrid model's recurrent state in a pool
// of one slot; the logits of every prompt row, or only of the prompt's last position. The oracle the model tests
// compare whole, chunked and token-at-a-time prefill with (reference_greedy.h walks the same loop for tokens).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_storage.h"
#include "kv/state_storage.h"
#include "model/batch_view.h"
#include "model/model.h"
#include "model/workspace.h"

namespace pagoda::testing {

struct ChunkedPromptOptions {
  int32_t block_size = 16;
  bool blocks_reversed = false;  // the sequence's block table runs backwards through the storage
  bool every_row = true;         // false: only the prompt's last position
  int32_t threads = 2;
};

inline std::vector<float> chunked_prompt_logits(const Model& model, std::span<const TokenId> prompt, int32_t chunk,
                                                const ChunkedPromptOptions& options = {}) {
  const int32_t n = int32_t(prompt.size()), bs = options.block_size;
  const int32_t num_blocks = (n + bs - 1) / bs;
  ThreadPool pool(options.threads);
  KvStorage kv(model.config().kv_shape(), num_blocks, bs);
  const bool hybrid = model.config().has_recurrent_state();
  StateStorage states(model.config().state_floats_per_seq(), hybrid ? 1 : 0);
  KvCacheView view = kv.view();
  view.state = states.view();
  Workspace ws(model.config(), chunk, num_blocks * bs, options.every_row ? chunk : 1, options.threads);
  std::vector<BlockId> table(static_cast<size_t>(num_blocks));
  if (options.blocks_reversed)
    std::iota(table.rbegin(), table.rend(), 0);
  else
    std::iota(table.begin(), table.end(), 0);
  std::vector<float> out;
  for (int32_t begin = 0; begin < n; begin += chunk) {
    const int32_t len = std::min(chunk, n - begin);
    std::vector<Pos> positions(static_cast<size_t>(len));
    std::vector<int32_t> slots(static_cast<size_t>(len)), rows;
    for (int32_t i = 0; i < len; ++i) {
      const int32_t p = begin + i;
      positions[size_t(i)] = p;
      slots[size_t(i)] = table[size_t(p / bs)] * bs + p % bs;
      if (options.every_row) rows.push_back(i);
    }
    if (!options.every_row) rows.push_back(len - 1);
    const int32_t seq_starts[] = {0, len}, context_lens[] = {begin + len}, state_slot = 0;
    BatchView batch;
    batch.tokens = prompt.subspan(size_t(begin), size_t(len));
    batch.positions = positions;
    batch.slot_ids = slots;
    batch.seq_starts = seq_starts;
    batch.context_lens = context_lens;
    batch.block_tables = BlockTableView{table.data(), 1, num_blocks};
    batch.logits_rows = rows;
    if (hybrid) batch.state_slots = std::span<const int32_t>(&state_slot, 1);
    const LogitsView l = model.forward(batch, view, ws, pool);
    if (!options.every_row) out.clear();
    for (int32_t r = 0; r < l.num_rows; ++r) out.insert(out.end(), l.row(r).begin(), l.row(r).end());
  }
  return out;
}

}  // namespace pagoda::testing
