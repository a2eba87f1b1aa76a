// Random-weight qwen35, qwen35moe and qwen3next GGUFs.
#include "synth/random_qwen35_writer.h"

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

ModelConfig qwen35_config_of(const ModelShape& s) {
  ModelConfig c;
  const bool next = s.gguf_architecture == "qwen3next";
  c.architecture = next ? "qwen3next" : s.num_experts > 0 ? "qwen35moe" : "qwen35";
  c.delta_net_grouped_v_heads = next;
  c.num_experts = s.num_experts;
  c.num_experts_used = s.num_experts_used;
  c.expert_hidden_dim = s.expert_hidden_dim;
  c.shared_expert_hidden_dim = s.shared_expert_hidden_dim;
  c.shared_expert_gated = s.shared_expert_hidden_dim > 0;
  c.expert_weights_norm = s.num_experts > 0;
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.num_layers = s.num_layers;
  c.num_heads = s.num_heads;
  c.num_kv_heads = s.num_kv_heads;
  c.head_dim = s.head_size();
  c.rope_dim = s.rope_dim > 0 ? s.rope_dim : s.head_size();
  c.vocab_size = s.vocab_size;
  c.context_length = s.context_length;
  c.rms_eps = s.rms_eps;
  c.rope_theta = s.rope_theta;
  c.delta_net_conv_kernel = s.delta_net_conv_kernel;
  c.delta_net_k_heads = s.delta_net_k_heads;
  c.delta_net_v_heads = s.delta_net_v_heads;
  c.delta_net_head_dim = s.delta_net_head_dim;
  for (int32_t l = 0; l < c.num_layers; ++l) c.layer_is_conv.push_back((l + 1) % 4 != 0);
  c.attn_output_gate = true;
  return c;
}

}  // namespace

Status write_random_qwen35_model(const RandomModelOptions& o) {
  const ModelShape& s = o.shape;
  if (s.gguf_architecture != "qwen35" && s.gguf_architecture != "qwen3next")
    return make_error(fmt::format("shape {} is not a qwen35 / qwen35moe / qwen3next shape", s.name));
  if (s.gguf_architecture == "qwen3next" && (s.num_experts == 0 || s.shared_expert_hidden_dim <= 0))
    return make_error(fmt::format("shape {}: qwen3next needs experts and a shared expert", s.name));
  if (s.num_experts > 0 && (s.num_experts_used <= 0 || s.num_experts_used > s.num_experts || s.expert_hidden_dim <= 0))
    return make_error(fmt::format("shape {} has inconsistent experts", s.name));
  if (!random_model_supports(o.weight_type))
    return make_error(fmt::format("gen-model cannot write {} weights (supported: f32, f16, q8_0, q4_0)",
                                  format::ggml_type_name(o.weight_type)));
  if (s.num_layers < 4)
    return make_error(fmt::format("{}: at least 4 layers (the fourth is the first full-attention layer), got {}",
                                  s.name, s.num_layers));
  if (s.num_kv_heads <= 0 || s.num_heads % s.num_kv_heads != 0 || s.delta_net_k_heads <= 0 ||
      s.delta_net_v_heads % s.delta_net_k_heads != 0 || s.delta_net_head_dim <= 0 || s.delta_net_conv_kernel < 2 ||
      s.vocab_size < 3)
    return make_error(fmt::format("shape {} is inconsistent", s.name));
  const ModelConfig c = qwen35_config_of(s);
  format::GgufWriter w =
      model_gguf_metadata(c, fmt::format("{} (random weights, seed {})", s.name, o.seed), o.weight_type);
  format::add_placeholder_vocabulary(w, s.vocab_size);

  using format::gguf_tensor::block_tensor;
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const int64_t conv_dim = c.delta_net_conv_dim(), value_dim = c.delta_net_value_dim(), v_heads = c.delta_net_v_heads;
  std::vector<RandomTensorSpec> specs;
  specs.push_back({t::kTokenEmbedding, {dim, c.vocab_size}, RandomValues::kMatrix});
  specs.push_back({t::kOutputNorm, {dim}, RandomValues::kNorm});
  if (!s.tied_embeddings) specs.push_back({t::kOutput, {dim, c.vocab_size}, RandomValues::kMatrix});
  for (int32_t l = 0; l < c.num_layers; ++l) {
    specs.push_back({block_tensor(l, t::kAttnNorm), {dim}, RandomValues::kNorm});
    specs.push_back({block_tensor(l, t::kPostAttentionNorm), {dim}, RandomValues::kNorm});
    if (c.is_conv_layer(l)) {
      specs.push_back({block_tensor(l, t::kAttnQkv), {dim, conv_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnGate), {dim, value_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kSsmConv1d), {c.delta_net_conv_kernel, conv_dim}, RandomValues::kTaps});
      specs.push_back({block_tensor(l, t::kSsmDt, "bias"), {v_heads}, RandomValues::kSmall});
      specs.push_back({block_tensor(l, t::kSsmA, ""), {v_heads}, RandomValues::kDecay});
      if (c.delta_net_grouped_v_heads) {
        specs.push_back({block_tensor(l, t::kSsmBetaAlpha), {dim, 2 * v_heads}, RandomValues::kMatrix});
      } else {
        specs.push_back({block_tensor(l, t::kSsmBeta), {dim, v_heads}, RandomValues::kMatrix});
        specs.push_back({block_tensor(l, t::kSsmAlpha), {dim, v_heads}, RandomValues::kMatrix});
      }
      specs.push_back({block_tensor(l, t::kSsmNorm), {c.delta_net_head_dim}, RandomValues::kNorm});
      specs.push_back({block_tensor(l, t::kSsmOut), {value_dim, dim}, RandomValues::kMatrix});
    } else {
      specs.push_back({block_tensor(l, t::kAttnQ), {dim, 2 * q_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnK), {dim, kv_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnV), {dim, kv_dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnOutput), {q_dim, dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kAttnQNorm), {c.head_dim}, RandomValues::kNorm});
      specs.push_back({block_tensor(l, t::kAttnKNorm), {c.head_dim}, RandomValues::kNorm});
    }
    if (c.num_experts > 0) {
      const int64_t experts = c.num_experts, expert_hidden = c.expert_hidden_dim, shared = c.shared_expert_hidden_dim;
      specs.push_back({block_tensor(l, t::kFfnGateInp), {dim, experts}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnGateExps), {dim, expert_hidden, experts}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUpExps), {dim, expert_hidden, experts}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDownExps), {expert_hidden, dim, experts}, RandomValues::kMatrix});
      if (shared > 0) {
        specs.push_back({block_tensor(l, t::kFfnGateInpShexp), {dim}, RandomValues::kSmall});
        specs.push_back({block_tensor(l, t::kFfnGateShexp), {dim, shared}, RandomValues::kMatrix});
        specs.push_back({block_tensor(l, t::kFfnUpShexp), {dim, shared}, RandomValues::kMatrix});
        specs.push_back({block_tensor(l, t::kFfnDownShexp), {shared, dim}, RandomValues::kMatrix});
      }
    } else {
      specs.push_back({block_tensor(l, t::kFfnGate), {dim, hidden}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUp), {dim, hidden}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDown), {hidden, dim}, RandomValues::kMatrix});
    }
  }

  return write_random_tensors(w, specs, o);
}

}  // namespace pagoda::synth
