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

namespace pagoda::synth {
namespace {

using format::GgmlType;

// What a tensor's values are: a weight matrix (the options' type), or f32 norm scales or selection biases.
enum class Deepseek2Values : uint8_t { kMatrix, kNorm, kBias };

struct Deepseek2Spec {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order
  Deepseek2Values values;
};

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
  std::vector<Deepseek2Spec> specs;
  specs.push_back({t::kTokenEmbedding, {dim, c.vocab_size}, Deepseek2Values::kMatrix});
  specs.push_back({t::kOutputNorm, {dim}, Deepseek2Values::kNorm});
  specs.push_back({t::kOutput, {dim, c.vocab_size}, Deepseek2Values::kMatrix});
  for (int32_t l = 0; l < c.num_layers; ++l) {
    specs.push_back({block_tensor(l, t::kAttnNorm), {dim}, Deepseek2Values::kNorm});
    if (c.mla_q_lora_rank > 0) {
      const int64_t rank = c.mla_q_lora_rank;
      specs.push_back({block_tensor(l, t::kAttnQA), {dim, rank}, Deepseek2Values::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnQANorm), {rank}, Deepseek2Values::kNorm});
      specs.push_back({block_tensor(l, t::kAttnQB), {rank, heads * key}, Deepseek2Values::kMatrix});
    } else {
      specs.push_back({block_tensor(l, t::kAttnQ), {dim, heads * key}, Deepseek2Values::kMatrix});
    }
    specs.push_back({block_tensor(l, t::kAttnKvAMqa), {dim, latent + c.rope_dim}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnKvANorm), {latent}, Deepseek2Values::kNorm});
    specs.push_back({block_tensor(l, t::kAttnKB), {c.mla_nope_dim(), latent, heads}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnVB), {latent, value, heads}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnOutput), {heads * value, dim}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnNorm), {dim}, Deepseek2Values::kNorm});
    if (!c.is_moe_layer(l)) {
      specs.push_back({block_tensor(l, t::kFfnGate), {dim, c.hidden_dim}, Deepseek2Values::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDown), {c.hidden_dim, dim}, Deepseek2Values::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUp), {dim, c.hidden_dim}, Deepseek2Values::kMatrix});
      continue;
    }
    specs.push_back({block_tensor(l, t::kFfnGateInp), {dim, experts}, Deepseek2Values::kMatrix});
    if (c.expert_gating_sigmoid) specs.push_back({block_tensor(l, t::kFfnExpProbsB, "bias"), {experts}, Deepseek2Values::kBias});
    specs.push_back({block_tensor(l, t::kFfnDownExps), {hidden, dim, experts}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnGateExps), {dim, hidden, experts}, Deepseek2Values::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnUpExps), {dim, hidden, experts}, Deepseek2Values::kMatrix});
    if (c.shared_expert_hidden_dim > 0) {
      const int64_t shared = c.shared_expert_hidden_dim;
      specs.push_back({block_tensor(l, t::kFfnGateShexp), {dim, shared}, Deepseek2Values::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDownShexp), {shared, dim}, Deepseek2Values::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUpShexp), {dim, shared}, Deepseek2Values::kMatrix});
    }
  }

  const int32_t num_tensors = int32_t(specs.size());
  const bool block_type = o.weight_type == GgmlType::kQ8_0 || o.weight_type == GgmlType::kQ4_0;
  for (int32_t i = 0; i < num_tensors; ++i) {
    const Deepseek2Spec& spec = specs[size_t(i)];
    if (spec.values == Deepseek2Values::kMatrix && block_type && spec.dims[0] % 32 != 0)
      return make_error(fmt::format("{}: {} rows of {} values are not whole {} blocks", s.name, spec.name, spec.dims[0],
                                    format::ggml_type_name(o.weight_type)));
    const GgmlType type = spec.values == Deepseek2Values::kMatrix ? o.weight_type : GgmlType::kF32;
    uint64_t rows = 1;
    for (size_t d = 1; d < spec.dims.size(); ++d) rows *= uint64_t(spec.dims[d]);
    const uint64_t bytes = format::ggml_row_bytes(type, uint64_t(spec.dims[0])) * rows;
    const uint64_t seed = o.seed * 0x100000001B3ull + uint64_t(i);
    w.add_tensor_generated(spec.name, type, spec.dims, bytes,
                           [&o, spec, type, seed, i, num_tensors](std::span<uint8_t> dst) {
                             fill_random_weights(dst, type, seed);
                             if (spec.values != Deepseek2Values::kMatrix) {
                               float* v = reinterpret_cast<float*>(dst.data());
                               for (size_t k = 0; k < dst.size() / 4; ++k) {
                                 const float unit = v[k] / 0.034641016f;  // uniform in [-1, 1)
                                 v[k] = spec.values == Deepseek2Values::kNorm ? 1.0f + 0.5f * unit : 0.1f * unit;
                               }
                             }
                             if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
                           });
  }
  return w.write(o.output_path);
}

}  // namespace pagoda::synth
