// The step protocol of a model split over ranks: tensor parallel (each rank of a stage holds some heads and FFN
// units), pipeline parallel (each stage holds contiguous layers), or both. World rank 0 runs the engine (or the
// generator) over a ParallelLeader: a Model that sends each step's BatchView (with its KV block copies and the
// KV and workspace shapes) to every rank, then computes its own part. Every other rank runs
// run_parallel_worker: it receives each step, makes the block copies in its own KV cache (its heads or layers
// of the same blocks: rank 0's block ids are everyone's), and computes its part. Under pipeline parallelism the
// step is cut into micro-batches (micro_batch.h) that flow stage to stage, and the last stage sends the logits
// to rank 0. Owns no scheduling: the workers only follow.
#pragma once

#include <memory>
#include <vector>

#include "core/collectives.h"
#include "model/model.h"

namespace pagoda::parallel {

// tensor_parallel ranks per stage, pipeline_parallel stages; world rank = stage * tensor_parallel + tp rank.
struct ParallelLayout {
  int32_t tensor_parallel = 1;
  int32_t pipeline_parallel = 1;

  int32_t num_ranks() const { return tensor_parallel * pipeline_parallel; }
  int32_t stage_of(int32_t world_rank) const { return world_rank / tensor_parallel; }
  int32_t tp_rank_of(int32_t world_rank) const { return world_rank % tensor_parallel; }
  int32_t world_rank(int32_t stage, int32_t tp_rank) const { return stage * tensor_parallel + tp_rank; }
};

// A rank's buffers for the pipeline hand-offs, reused from step to step.
struct StageBuffers {
  std::vector<std::vector<float>> sends;  // one per micro-batch in flight
  std::vector<float> logits;              // rank 0: one micro-batch's logits as they arrive
};

class ParallelLeader final : public Model {
 public:
  // `part` is world rank 0's part of the model (loaded with stage 0 and its tensor-parallel group).
  ParallelLeader(std::unique_ptr<Model> part, Collectives& world, ParallelLayout layout);
  ~ParallelLeader() override;  // tells the workers to return

  // Not reentrant: one forward at a time, as the collectives require. Returns the whole step's logits.
  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                     ThreadPool& pool) const override;
  // The halves belong to the stages: a leader is never itself a stage of another pipeline.
  const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv,
                              Workspace& workspace, ThreadPool& pool) const override;
  LogitsView forward_logits(const BatchView& batch, Workspace& workspace, ThreadPool& pool) const override;
  // Rank 0's part's shape: its heads and its stage's layers (its KV cache and workspace are sized from it).
  const ModelConfig& config() const override { return part_->config(); }
  int64_t num_steps() const { return num_steps_; }  // forward calls so far

 private:
  std::unique_ptr<Model> part_;
  Collectives& world_;
  ParallelLayout layout_;
  mutable StageBuffers buffers_;
  mutable int64_t num_steps_ = 0;
};

// Until rank 0's leader is destroyed: every step it sends, computed on `part` with `num_threads` threads (0: one
// per core).
void run_parallel_worker(const Model& part, Collectives& world, ParallelLayout layout, int32_t num_threads);

}  // namespace pagoda::parallel
