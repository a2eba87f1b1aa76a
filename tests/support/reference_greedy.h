// reference_greedy: the plainest greedy generation of one prompt over Model::forward, the oracle the Engine's
// text is checked against (as the scalar kernels are the SIMD ones'): the prompt in forward calls of at most
// `max_chunk` tokens, then one token per call, over an identity block table of its own KV storage, stopping at
// max_tokens or an end-of-generation token; a hybrid model's recurrent state in a pool of one slot. No scheduler, no
// batch builder, no KV manager, no sampler.
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
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {

inline std::vector<TokenId> reference_greedy(const Model& model, const Tokenizer& tokenizer,
                                             std::span<const TokenId> prompt, int32_t max_tokens,
                                             KvCacheTypes kv_types = KvCacheTypes(), int32_t max_chunk = 256) {
  constexpr int32_t kBlockSize = 16;
  const int32_t max_seq_len = int32_t(prompt.size()) + max_tokens;
  const int32_t num_blocks = (max_seq_len + kBlockSize - 1) / kBlockSize;
  ThreadPool pool(1);
  KvStorage kv(model.config().kv_shape(), num_blocks, kBlockSize, kv_types);
  const bool hybrid = model.config().has_recurrent_state();
  StateStorage states(model.config().state_floats_per_seq(), hybrid ? 1 : 0);
  KvCacheView view = kv.view();
  view.state = states.view();
  const int32_t state_slot = 0;
  Workspace workspace(model.config(), max_chunk, max_seq_len, 1, 1);
  std::vector<BlockId> table(static_cast<size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<TokenId> tokens(prompt.begin(), prompt.end());
  std::vector<Pos> positions;
  std::vector<int32_t> slots;
  int32_t num_computed = 0;
  std::vector<TokenId> output;
  while (int32_t(output.size()) < max_tokens) {
    // Everything not yet computed, at most max_chunk tokens a call; the last call's last row gives the next token.
    LogitsView logits;
    while (num_computed < int32_t(tokens.size())) {
      const int32_t n = std::min(max_chunk, int32_t(tokens.size()) - num_computed);
      positions.resize(size_t(n));
      slots.resize(size_t(n));
      for (int32_t i = 0; i < n; ++i) positions[size_t(i)] = slots[size_t(i)] = num_computed + i;  // identity table
      const int32_t seq_starts[2] = {0, n};
      const int32_t context_len = num_computed + n;
      const int32_t last_row = n - 1;
      BatchView batch;
      batch.tokens = std::span<const TokenId>(tokens).subspan(size_t(num_computed), size_t(n));
      batch.positions = positions;
      batch.slot_ids = slots;
      batch.seq_starts = seq_starts;
      batch.context_lens = std::span<const int32_t>(&context_len, 1);
      batch.block_tables = BlockTableView{table.data(), 1, num_blocks};
      batch.logits_rows = std::span<const int32_t>(&last_row, 1);
      if (hybrid) batch.state_slots = std::span<const int32_t>(&state_slot, 1);
      logits = model.forward(batch, view, workspace, pool);
      num_computed += n;
    }
    const std::span<const float> row = logits.row(0);
    const TokenId next = TokenId(std::max_element(row.begin(), row.end()) - row.begin());
    output.push_back(next);
    tokens.push_back(next);
    if (tokenizer.ends_generation(next)) break;
  }
  return output;
}

}  // namespace pagoda::testing
