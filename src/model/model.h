// Model: a decoder-only transformer's forward pass. It computes; it never sees a request, never allocates a
// KV block, and owns no threads. Immutable after construction, so one Model serves many workspaces.
#pragma once

#include "core/thread_pool.h"
#include "model/batch_view.h"
#include "model/kv_cache_view.h"
#include "model/logits_view.h"
#include "model/model_config.h"
#include "model/workspace.h"

namespace pagoda {

class Model {
 public:
  virtual ~Model() = default;
  // Runs the tokens of `batch`, writes their K/V into `kv` at batch.slot_ids, and returns the logits of
  // batch.logits_rows (in that order). The work of each op is split over `pool`'s threads (the caller's pool;
  // the model keeps none). Preconditions (checked): num_tokens <= workspace.max_tokens, every context length
  // <= workspace.max_context, logits rows <= workspace.max_logits_rows, pool threads <= workspace.num_threads.
  virtual LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                             ThreadPool& pool) const = 0;
  virtual const ModelConfig& config() const = 0;
};

}  // namespace pagoda
