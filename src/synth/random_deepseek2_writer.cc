// Random-weight deepseek2 GGUFs.
#include "synth/random_deepseek2_writer.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "format/gguf_names.h"
#include "format/gguf_writer.h"
#include "format/placeholder_vocabulary.h"
#include "model/hf_gguf.h"
#include "model/model_config.h"
#include "synth/random_tensor_specs.h"

namespace pagoda::synth {
namespace {

ModelConfig deepseek2_config_of(const ModelShape& s) {
  ModelConfig c;
  c.architecture = "deepseek2";
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.num_layers = s.num_layers;
  c.num_heads = s.num_heads;
  c.num_kv_heads = 1;
  c.rope_dim = s.rope_dim;
  c.head_dim = s.mla_kv_lora_rank + s.rope_dim;
  c.mla_kv_lora_rank = s.mla_kv_lora_rank;
  c.mla_q_lora_rank = s.mla_q_lora_rank;
  c.mla_key_dim = s.head_size();
  c.mla_value_dim = s.mla_value_dim;
  c.vocab_size = s.vocab_size;
  c.context_length = s.context_length;
  c.rms_eps = s.rms_eps;
  c.rope_theta = s.rope_theta;
  c.leading_dense_layers = s.leading_dense_layers;
  c.num_experts = s.num_experts;
  c.num_experts_used = s.num_experts_used;
  c.expert_hidden_dim = s.expert_hidden_dim;
  c.shared_expert_hidden_dim = s.shared_expert_hidden_dim;
  c.expert_gating_sigmoid = s.expert_gating_sigmoid;
  c.expert_groups = s.expert_groups;
  c.expert_groups_used = s.expert_groups_used;
  c.expert_weights_norm = s.expert_weights_norm;
  c.expert_weights_scale = s.expert_weights_scale;
  if (s.yarn_factor > 0.0f) {
    c.rope_scaling = RopeScalingType::kYarn;
    c.rope_freq_scale = 1.0f / s.yarn_factor;
    c.rope_original_context = s.yarn_original_context;
    c.yarn_log_multiplier = s.yarn_log_multiplier;
  }
  return c;
}

}  // namespace

Status write_random_deepseek2_model(const RandomModelOptions& o) {
  const ModelShape& s = o.shape;
  if (s.gguf_architecture != "deepseek2") return make_error(fmt::format("shape {} is not a deepseek2 shape", s.name));
  if (!random_model_supports(o.weight_type))
    return make_error(fmt::format("gen-model cannot write {} weights (supported: f32, f16, q8_0, q4_0)",
                                  format::ggml_type_name(o.weight_type)));
  if (s.num_layers <= 0 || s.num_heads <= 0 || s.mla_kv_lora_rank <= 0 || s.rope_dim <= 0 || s.rope_dim % 2 != 0 ||
      s.head_size() <= s.rope_dim || s.mla_value_dim <= 0 || s.num_experts <= 0 || s.num_experts_used <= 0 ||
      s.num_experts_used > s.num_experts || s.expert_hidden_dim <= 0 ||
      s.shared_expert_hidden_dim % s.expert_hidden_dim != 0 || s.leading_dense_layers > s.num_layers ||
      s.vocab_size < 3)
    return make_error(fmt::format("shape {} is inconsistent", s.name));
  const ModelConfig c = deepseek2_config_of(s);
  format::GgufWriter w =
      model_gguf_metadata(c, fmt::format("{} (random weights, seed {})", s.name, o.seed), o.weight_type);
  format::add_placeholder_vocabulary(w, s.vocab_size);

  using format::gguf_tensor::block_tensor;
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, heads = c.num_heads, latent = c.mla_kv_lora_rank, key = c.mla_key_dim;
  const int64_t value = c.mla_value_dim, experts = c.num_experts, hidden = c.expert_hidden_dim;
  std::vector<RandomTensorSpec> specs;
  specs.push_back({t::kTokenEmbedding, {dim, c.vocab_size}, RandomValues::kMatrix});
  specs.push_back({t::kOutputNorm, {dim}, RandomValues::kNorm});
  specs.push_back({t::kOutput, {dim, c.vocab_size}, RandomValues::kMatrix});
  for (int32_t l = 0; l < c.num_layers; ++l) {
    specs.push_back({block_tensor(l, t::kAttnNorm), {dim}, RandomValues::kNorm});
    if (c.mla_q_lora_rank > 0) {
      const int64_t rank = c.mla_q_lora_rank;
      specs.push_back({block_tensor(l, t::kAttnQA), {dim, rank}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnQANorm), {rank}, RandomValues::kNorm});
      specs.push_back({block_tensor(l, t::kAttnQB), {rank, heads * key}, RandomValues::kMatrix});
    } else {
      specs.push_back({block_tensor(l, t::kAttnQ), {dim, heads * key}, RandomValues::kMatrix});
    }
    specs.push_back({block_tensor(l, t::kAttnKvAMqa), {dim, latent + c.rope_dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnKvANorm), {latent}, RandomValues::kNorm});
    specs.push_back({block_tensor(l, t::kAttnKB), {c.mla_nope_dim(), latent, heads}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnVB), {latent, value, heads}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnOutput), {heads * value, dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnNorm), {dim}, RandomValues::kNorm});
    if (!c.is_moe_layer(l)) {
      specs.push_back({block_tensor(l, t::kFfnGate), {dim, c.hidden_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDown), {c.hidden_dim, dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUp), {dim, c.hidden_dim}, RandomValues::kMatrix});
      continue;
    }
    specs.push_back({block_tensor(l, t::kFfnGateInp), {dim, experts}, RandomValues::kMatrix});
    if (c.expert_gating_sigmoid) specs.push_back({block_tensor(l, t::kFfnExpProbsB, "bias"), {experts}, RandomValues::kSelectionBias});
    specs.push_back({block_tensor(l, t::kFfnDownExps), {hidden, dim, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnGateExps), {dim, hidden, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnUpExps), {dim, hidden, experts}, RandomValues::kMatrix});
    if (c.shared_expert_hidden_dim > 0) {
      const int64_t shared = c.shared_expert_hidden_dim;
      specs.push_back({block_tensor(l, t::kFfnGateShexp), {dim, shared}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDownShexp), {shared, dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUpShexp), {dim, shared}, RandomValues::kMatrix});
    }
  }

  return write_random_tensors(w, specs, o);
}

}  // namespace pagoda::synth
