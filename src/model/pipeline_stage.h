// Pipeline-parallel stages: which contiguous layers one of P stages holds, and that stage's shape and weights cut
// from the full model's views (no copy). The first stage also holds the token embedding, the last the final
// norm and the classifier; a stage's KV cache and workspace are sized from its own config (its layers only).
// Pure: no MPI, no threads.
#pragma once

#include <pagoda/status.h>

#include <cstdint>

#include "model/model_config.h"
#include "model/model_weights.h"

namespace pagoda {

struct PipelineStage {
  int32_t stage = 0;
  int32_t num_stages = 1;
  int32_t layer_begin = 0;  // [layer_begin, layer_end) of the full model's layers
  int32_t layer_end = 0;

  bool first() const { return stage == 0; }
  bool last() const { return stage == num_stages - 1; }
};

// Layers split as evenly as they go, the extra ones to the first stages (the last also runs the classifier).
// Error: more stages than layers ("pipeline parallel 4: 2 layers do not split over 4 stages").
Result<PipelineStage> plan_pipeline_stage(const ModelConfig& config, int32_t stage, int32_t num_stages);

// The stage's shape: num_layers is its own count; everything else is the full model's.
ModelConfig stage_model_config(const ModelConfig& full, const PipelineStage& stage);

// The stage's layers; the embedding on the first stage only, the final norm and classifier on the last only
// (the others are empty views, which repacking skips).
ModelWeights stage_model_weights(const ModelWeights& full, const PipelineStage& stage);

}  // namespace pagoda
