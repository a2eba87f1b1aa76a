// The pipeline split of layers, and the weight views each stage keeps.
#include "model/pipeline_stage.h"

#include <fmt/format.h>

namespace pagoda {

Result<PipelineStage> plan_pipeline_stage(const ModelConfig& config, int32_t stage, int32_t num_stages) {
  if (num_stages < 1 || stage < 0 || stage >= num_stages)
    return make_error(fmt::format("pipeline parallel: stage {} of {} stages", stage, num_stages));
  if (config.has_recurrent_state() && num_stages > 1)
    return make_error(fmt::format("pipeline parallel: the hybrid model {} cannot be split into stages yet",
                                  config.architecture));
  if (config.leading_dense_layers > 0 && num_stages > 1)
    return make_error(fmt::format("pipeline parallel: {} (leading dense layers before its experts) cannot be split "
                                  "into stages yet",
                                  config.architecture));
  if (config.num_layers < num_stages)
    return make_error(fmt::format("pipeline parallel {}: {} layers do not split over {} stages", num_stages,
                                  config.num_layers, num_stages));
  const int32_t base = config.num_layers / num_stages, extra = config.num_layers % num_stages;
  PipelineStage s;
  s.stage = stage;
  s.num_stages = num_stages;
  s.layer_begin = stage * base + std::min(stage, extra);
  s.layer_end = s.layer_begin + base + (stage < extra ? 1 : 0);
  return s;
}

ModelConfig stage_model_config(const ModelConfig& full, const PipelineStage& stage) {
  ModelConfig c = full;
  c.num_layers = stage.layer_end - stage.layer_begin;
  if (!c.layer_is_swa.empty())  // the stage's layers keep their own windows
    c.layer_is_swa.assign(full.layer_is_swa.begin() + stage.layer_begin, full.layer_is_swa.begin() + stage.layer_end);
  if (!c.layer_skips_rope.empty())  // and their own NoPE marks
    c.layer_skips_rope.assign(full.layer_skips_rope.begin() + stage.layer_begin,
                              full.layer_skips_rope.begin() + stage.layer_end);
  return c;
}

ModelWeights stage_model_weights(const ModelWeights& full, const PipelineStage& stage) {
  ModelWeights out;
  out.owned_storage = full.owned_storage;
  if (stage.first()) out.token_embd = full.token_embd;
  if (stage.last()) {
    out.output_norm = full.output_norm;
    out.output = full.output;
  }
  out.layers.assign(full.layers.begin() + stage.layer_begin, full.layers.begin() + stage.layer_end);
  return out;
}

}  // namespace pagoda
