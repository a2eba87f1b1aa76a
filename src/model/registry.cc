// The architecture table.
#include "model/registry.h"

#include <fmt/format.h>

#include "core/collectives.h"
#include "model/architecture.h"
#include "model/bert_model.h"
#include "model/llama_model.h"
#include "model/pipeline_stage.h"
#include "model/tensor_parallel_shard.h"
#include "model/weight_repack.h"

namespace pagoda {

bool architecture_is_supported(const std::string& arch) { return find_architecture(arch) != nullptr; }

Result<std::unique_ptr<Model>> create_model(const format::GgufFile& file, const kernels::KernelTable& kernels,
                                            const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto arch, file.get_string(gguf_key::kArchitecture));
  if (!arch) return make_error(fmt::format("{}: missing metadata key general.architecture", file.name()));
  if (!architecture_is_supported(*arch))
    return make_error(fmt::format("{}: unknown architecture '{}' (supported: {})", file.name(), *arch,
                                  supported_architecture_names()));
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, model_config_from_gguf(file));
  return create_model(std::move(config), tensor_set_from_gguf(file, kernels.quantize_row_q8_0), kernels, options);
}

Result<std::unique_ptr<Model>> create_model(ModelConfig config, const TensorSet& tensors,
                                            const kernels::KernelTable& kernels, const ModelOptions& options) {
  PAGODA_RETURN_IF_ERROR(apply_rope_overrides(options.rope_overrides, config));
  if (config.encoder) {
    if (options.pipeline_stages > 1 || (options.tensor_parallel != nullptr && options.tensor_parallel->size() > 1))
      return make_error(fmt::format("{}: an encoder ({}) runs whole: no pipeline stages or tensor-parallel ranks",
                                    tensors.source, config.architecture));
    // Its forward pass has no naive-attention, unfused, unrepacked or observed variant: asking for one is refused
    // rather than ignored.
    if (!options.fusion || options.attention != AttentionKind::kFlash || !options.repack_weights ||
        options.linear_observer != nullptr)
      return make_error(fmt::format("{}: an encoder ({}) runs one forward pass: --no-fusion, --attention naive, "
                                    "--no-repack and AWQ calibration do not apply to it",
                                    tensors.source, config.architecture));
    PAGODA_ASSIGN_OR_RETURN(BertWeights weights, bert_weights_from_tensors(tensors, config));
    return std::unique_ptr<Model>(std::make_unique<BertModel>(std::move(config), std::move(weights), kernels));
  }
  PAGODA_ASSIGN_OR_RETURN(ModelWeights weights, model_weights_from_tensors(tensors, config));
  const bool gemma4_layers = config.per_layer_input_dim > 0 || config.num_kv_shared_layers > 0 || config.has_layer_shapes();
  if (gemma4_layers && (options.pipeline_stages > 1 || (options.tensor_parallel != nullptr && options.tensor_parallel->size() > 1)))
    return make_error(fmt::format("{}: {}'s per-layer embeddings, shared K/V and per-layer shapes cannot be split over "
                                  "pipeline stages or tensor-parallel ranks yet",
                                  tensors.source, config.architecture));
  if (options.pipeline_stages > 1) {
    // This stage's layers (views, no copy); a tensor-parallel split below cuts them further.
    PAGODA_ASSIGN_OR_RETURN(PipelineStage stage,
                            plan_pipeline_stage(config, options.pipeline_stage, options.pipeline_stages));
    weights = stage_model_weights(weights, stage);
    config = stage_model_config(config, stage);
  }
  if (options.tensor_parallel != nullptr && options.tensor_parallel->size() > 1) {
    // Views of the whole model first (no copy), then this rank's cut of them.
    const Collectives& group = *options.tensor_parallel;
    if (config.qk_norm_whole)
      return make_error(fmt::format("{}: Q/K norms over the whole projection ({}) cannot be split over tensor-parallel "
                                    "ranks",
                                    tensors.source, config.architecture));
    PAGODA_ASSIGN_OR_RETURN(TensorParallelShard shard, plan_tensor_parallel_shard(config, group.rank(), group.size()));
    PAGODA_ASSIGN_OR_RETURN(ModelWeights shard_weights, shard_model_weights(weights, config, shard));
    if (options.repack_weights) repack_weights(kernels, shard_weights, tensors.file_mapped);
    return std::unique_ptr<Model>(std::make_unique<LlamaModel>(
        shard_model_config(config, shard), std::move(shard_weights), kernels, options, std::move(shard)));
  }
  if (options.repack_weights) repack_weights(kernels, weights, tensors.file_mapped);
  return std::unique_ptr<Model>(std::make_unique<LlamaModel>(std::move(config), std::move(weights), kernels, options));
}

}  // namespace pagoda
