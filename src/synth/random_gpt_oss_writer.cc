// Random-weight gpt-oss GGUFs.
#include "synth/random_gpt_oss_writer.h"

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

ModelConfig config_of(const ModelShape& s) {
  ModelConfig c;
  c.architecture = "gpt-oss";
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.num_layers = s.num_layers;
  c.num_heads = s.num_heads;
  c.num_kv_heads = s.num_kv_heads;
  c.head_dim = s.head_size();
  c.rope_dim = s.head_size();
  c.vocab_size = s.vocab_size;
  c.context_length = s.context_length;
  c.rms_eps = s.rms_eps;
  c.rope_theta = s.rope_theta;
  c.num_experts = s.num_experts;
  c.num_experts_used = s.num_experts_used;
  c.expert_hidden_dim = s.expert_hidden_dim;
  c.sliding_window = s.sliding_window;
  if (s.yarn_factor > 0.0f) {
    c.rope_scaling = RopeScalingType::kYarn;
    c.rope_freq_scale = 1.0f / s.yarn_factor;
    c.rope_original_context = s.yarn_original_context;
  }
  return c;
}

}  // namespace

Status write_random_gpt_oss_model(const RandomModelOptions& o) {
  const ModelShape& s = o.shape;
  if (s.gguf_architecture != "gpt-oss") return make_error(fmt::format("shape {} is not a gpt-oss shape", s.name));
  if (!random_model_supports(o.weight_type))
    return make_error(fmt::format("gen-model cannot write {} weights (supported: f32, f16, q8_0, q4_0)",
                                  format::ggml_type_name(o.weight_type)));
  if (s.num_layers <= 0 || s.num_kv_heads <= 0 || s.num_heads % s.num_kv_heads != 0 || s.num_experts <= 0 ||
      s.num_experts_used <= 0 || s.num_experts_used > s.num_experts || s.sliding_window <= 0 || s.vocab_size < 3)
    return make_error(fmt::format("shape {} is inconsistent", s.name));
  const ModelConfig c = config_of(s);
  format::GgufWriter w =
      model_gguf_metadata(c, fmt::format("{} (random weights, seed {})", s.name, o.seed), o.weight_type);
  format::add_placeholder_vocabulary(w, s.vocab_size);

  using format::gguf_tensor::block_tensor;
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), experts = c.num_experts;
  const int64_t hidden = c.expert_hidden_dim;
  std::vector<RandomTensorSpec> specs;
  specs.push_back({t::kTokenEmbedding, {dim, c.vocab_size}, RandomValues::kMatrix});
  specs.push_back({t::kOutputNorm, {dim}, RandomValues::kNorm});
  specs.push_back({t::kOutput, {dim, c.vocab_size}, RandomValues::kMatrix});
  for (int32_t l = 0; l < c.num_layers; ++l) {
    specs.push_back({block_tensor(l, t::kAttnNorm), {dim}, RandomValues::kNorm});
    specs.push_back({block_tensor(l, t::kAttnQ), {dim, q_dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnQ, "bias"), {q_dim}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kAttnK), {dim, kv_dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnK, "bias"), {kv_dim}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kAttnV), {dim, kv_dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnV, "bias"), {kv_dim}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kAttnOutput), {q_dim, dim}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kAttnOutput, "bias"), {dim}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kAttnSinks), {c.num_heads}, RandomValues::kSinks});
    specs.push_back({block_tensor(l, t::kPostAttentionNorm), {dim}, RandomValues::kNorm});
    specs.push_back({block_tensor(l, t::kFfnGateInp), {dim, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnGateInp, "bias"), {experts}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kFfnGateExps), {dim, hidden, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnGateExps, "bias"), {hidden, experts}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kFfnUpExps), {dim, hidden, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnUpExps, "bias"), {hidden, experts}, RandomValues::kSmall});
    specs.push_back({block_tensor(l, t::kFfnDownExps), {hidden, dim, experts}, RandomValues::kMatrix});
    specs.push_back({block_tensor(l, t::kFfnDownExps, "bias"), {dim, experts}, RandomValues::kSmall});
  }

  return write_random_tensors(w, specs, o);
}

}  // namespace pagoda::synth
