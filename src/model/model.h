// Model: a decoder-only transformer's forward pass. It computes; it never sees a request, never allocates a
// KV block, and owns no threads. Immutable after construction, so one Model serves many workspaces.
#pragma once

#include <span>

#include "core/check.h"
#include "core/thread_pool.h"
#include "model/batch_view.h"
#include "kv/kv_cache_view.h"
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

  // forward() in two halves, for pipeline stages (parallel/), each holding some of the layers.
  // forward_hidden runs this model's layers over the batch: `hidden_in` null embeds the batch's tokens (the
  // first stage), otherwise it is [num_tokens, dim] from the stage before. Returns the [num_tokens, dim] hidden
  // states after its layers, in the workspace (valid until its next use). forward_logits then applies the final
  // norm and classifier to batch.logits_rows of those hidden states (the last stage). The preconditions are
  // forward()'s.
  virtual const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv,
                                      Workspace& workspace, ThreadPool& pool) const = 0;
  virtual LogitsView forward_logits(const BatchView& batch, Workspace& workspace, ThreadPool& pool) const = 0;

  // A reranker's classification head (llama.cpp's rank pooling): the number of its outputs (the relevance score
  // first), 0 for a model without one; and the head over the pooled hidden state (f32 [dim]: the first token's final
  // hidden state for a cross-encoder, the last token's for a decoder reranker, rank_reads_last_token()) into `out`
  // (f32 [num_rank_outputs()]).
  virtual int32_t num_rank_outputs() const { return 0; }
  virtual bool rank_reads_last_token() const { return false; }
  virtual void rank(std::span<const float> pooled, std::span<float> out) const {
    PAGODA_CHECK(false, "this model has no classification head ({} in, {} out)", pooled.size(), out.size());
  }
};

}  // namespace pagoda
