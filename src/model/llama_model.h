// LlamaModel: the Llama forward pass (RMSNorm, RoPE on adjacent pairs, grouped-query attention, SwiGLU),
// f32 activations over f32/f16/bf16 weights that stay in the GGUF mapping. Owns its ModelWeights views and a
// reference to the process's kernel table.
#pragma once

#include "kernels/kernels.h"
#include "model/model.h"
#include "model/model_options.h"
#include "model/model_weights.h"

namespace pagoda {

class LlamaModel final : public Model {
 public:
  LlamaModel(ModelConfig config, ModelWeights weights, const kernels::KernelTable& kernels,
             const ModelOptions& options = {});

  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws, ThreadPool& pool) const override;
  const ModelConfig& config() const override { return config_; }
  const ModelOptions& options() const { return options_; }

 private:
  // y = W x for `num_tokens` rows of x, split over the pool.
  void linear(const WeightView& w, const float* x, float* y, int32_t num_tokens, Workspace& ws, ThreadPool& pool) const;
  void embed(TokenId token, float* out) const;
  // Rotates token t's K by RoPE and stores K and V at its slot (quantized for an int8 cache); with fusion the
  // rotation happens on the way into the cache instead of in the workspace first.
  void write_kv(const BatchView& batch, const KvCacheView& kv, int32_t layer, int32_t t, Workspace& ws) const;
  // options_.attention picks one: the paged flash kernel, or the naive two-pass reference.
  void attention(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws, ThreadPool& pool) const;
  void attention_flash(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                       ThreadPool& pool) const;
  void attention_naive(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                       ThreadPool& pool) const;

  ModelConfig config_;
  ModelWeights weights_;
  const kernels::KernelTable& kernels_;
  ModelOptions options_;
};

}  // namespace pagoda
