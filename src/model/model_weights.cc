// Finds and shape-checks every tensor of a Llama-family GGUF.
#include "model/model_weights.h"

#include <fmt/format.h>

#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "format/gguf_names.h"
#include "quant/block_awq_int4.h"
#include "quant/block_iq4_mxfp4.h"
#include "quant/block_kquants.h"
#include "quant/block_legacy_quants.h"
#include "quant/block_q7_k.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/row_int8.h"

namespace pagoda {
namespace {

// A reranker's head scores a pair with a few outputs (Qwen3-Reranker's: yes and no).
constexpr int64_t kMaxRankOutputs = 64;

Result<const TensorRef*> find(const TensorSet& f, const std::string& name, std::vector<int64_t> expected_dims) {
  const TensorRef* t = f.find(name);
  if (t == nullptr) return make_error(fmt::format("{}: missing tensor {}", f.source, name));
  if (t->dims != expected_dims)
    return make_error(fmt::format("{}: {} has shape {}, expected {}", f.source, name, format::dims_string(t->dims),
                                  format::dims_string(expected_dims)));
  if (!t->dtype)
    return make_error(
        fmt::format("{}: tensor '{}' has type {}, which pagoda cannot run yet", f.source, name, t->type_name));
  return t;
}

Result<WeightView> matrix(const TensorSet& f, const std::string& name, int64_t num_rows, int64_t num_cols) {
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, name, {num_cols, num_rows}));
  const DType dtype = *t->dtype;
  if (t->data == nullptr) return make_error(fmt::format("{}: {} has no data of its own", f.source, name));
  WeightView w{dtype, t->data, num_rows, num_cols};
  const std::string scale_name = format::awq_input_scale_name(name);
  if (f.find(scale_name) != nullptr) {
    if (!dtype_is_awq_int4(dtype))
      return make_error(fmt::format("{}: {} is {}, but only AWQ INT4 weights take an input scale ({})", f.source, name,
                                    dtype_name(dtype), scale_name));
    PAGODA_ASSIGN_OR_RETURN(const TensorRef* s, find(f, scale_name, {num_cols}));
    if (*s->dtype != DType::kF32)
      return make_error(fmt::format("{}: {} must be f32, got {}", f.source, scale_name, s->type_name));
    w.input_scale = static_cast<const float*>(s->data);
  }
  return w;
}

Result<std::vector<float>> vector_f32(const TensorSet& f, const std::string& name, int64_t n) {
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, name, {n}));
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(*t->dtype, t->data, out.data(), n);
  return out;
}

// Rows [row_begin, row_begin + num_rows) of a matrix view: one part of a fused tensor (Phi-3's attn_qkv, ffn_up).
WeightView row_range(const WeightView& w, int64_t row_begin, int64_t num_rows) {
  WeightView part = w;
  part.data = static_cast<const uint8_t*>(w.data) + row_begin * w.row_bytes();
  part.num_rows = num_rows;
  return part;
}

// The num_experts matrices [num_rows, num_cols] of a stacked expert tensor (GGUF dims [num_cols, num_rows,
// num_experts]), expert e at slices[e] (an HF folder's) or at e matrices into the data.
Result<std::vector<WeightView>> expert_matrices(const TensorSet& f, const std::string& name, int64_t num_experts,
                                                int64_t num_rows, int64_t num_cols) {
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, name, {num_cols, num_rows, num_experts}));
  if (f.find(format::awq_input_scale_name(name)) != nullptr)
    return make_error(fmt::format("{}: {} has an AWQ input scale, which expert tensors cannot take", f.source, name));
  if (!t->slices.empty() && t->slices.size() != size_t(num_experts))
    return make_error(
        fmt::format("{}: {} has {} slices for {} experts", f.source, name, t->slices.size(), num_experts));
  std::vector<WeightView> out;
  for (int64_t e = 0; e < num_experts; ++e) {
    WeightView w{*t->dtype, nullptr, num_rows, num_cols};
    w.data =
        t->slices.empty() ? static_cast<const uint8_t*>(t->data) + e * num_rows * w.row_bytes() : t->slices[size_t(e)];
    if (w.data == nullptr) return make_error(fmt::format("{}: {} has no data", f.source, name));
    out.push_back(w);
  }
  return out;
}

// An optional vector: empty when the file has no such tensor.
Result<std::vector<float>> optional_vector_f32(const TensorSet& f, const std::string& name, int64_t n) {
  if (f.find(name) == nullptr) return std::vector<float>();
  return vector_f32(f, name, n);
}

// An optional stack of per-expert bias vectors (GGUF dims [width, num_experts]) as one f32 vector, expert e's at
// e * width; empty when the file has no such tensor.
Result<std::vector<float>> optional_expert_biases(const TensorSet& f, const std::string& name, int64_t width,
                                                  int64_t num_experts) {
  if (f.find(name) == nullptr) return std::vector<float>();
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, name, {width, num_experts}));
  if (!t->slices.empty() || t->data == nullptr)
    return make_error(fmt::format("{}: {} must be one stored tensor", f.source, name));
  std::vector<float> out(size_t(width * num_experts));
  for (int64_t e = 0; e < num_experts; ++e)
    dequantize_row(*t->dtype, static_cast<const uint8_t*>(t->data) + e * dtype_row_bytes(*t->dtype, width),
                   out.data() + e * width, width);
  return out;
}

// An MoE layer's shared expert: three matrices, and the gate vector when the config has one (llama.cpp's converter
// writes it [dim, 1], the HF [1, dim] reversed; [dim] is accepted too).
Status load_shared_expert(const TensorSet& f, const ModelConfig& c, int32_t l, LayerWeights& lw) {
  const int64_t dim = c.dim, hidden = c.shared_expert_hidden_dim;
  PAGODA_ASSIGN_OR_RETURN(
      lw.shared_expert.w_gate,
      matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGateShexp), hidden, dim));
  PAGODA_ASSIGN_OR_RETURN(
      lw.shared_expert.w_up,
      matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUpShexp), hidden, dim));
  PAGODA_ASSIGN_OR_RETURN(
      lw.shared_expert.w_down,
      matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnDownShexp), dim, hidden));
  for (const WeightView* w : {&lw.shared_expert.w_gate, &lw.shared_expert.w_up, &lw.shared_expert.w_down})
    if (w->input_scale != nullptr)
      return make_error(
          fmt::format("{}: blk.{}: the shared expert's matrices cannot take an AWQ input scale", f.source, l));
  if (!c.shared_expert_gated) return Status::ok_status();
  const std::string gate = format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGateInpShexp);
  const TensorRef* found = f.find(gate);
  const bool column = found != nullptr && found->dims.size() == 2;
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, gate, column ? std::vector<int64_t>{dim, 1} : std::vector{dim}));
  lw.shared_expert_gate.resize(size_t(dim));
  dequantize_row(*t->dtype, t->data, lw.shared_expert_gate.data(), dim);
  return Status::ok_status();
}

// A short-convolution layer's in_proj, out_proj and taps (GGUF [L, dim], stored f32 by llama.cpp's converter).
Status load_short_conv(const TensorSet& f, const ModelConfig& c, int32_t l, LayerWeights& lw) {
  const int64_t dim = c.dim, taps = c.shortconv_l_cache;
  PAGODA_ASSIGN_OR_RETURN(
      lw.conv_in, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kShortConvInProj), 3 * dim, dim));
  PAGODA_ASSIGN_OR_RETURN(
      lw.conv_out, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kShortConvOutProj), dim, dim));
  const std::string name = format::gguf_tensor::block_tensor(l, format::gguf_tensor::kShortConvConv);
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, find(f, name, {taps, dim}));
  if (*t->dtype != DType::kF32 && *t->dtype != DType::kF16 && *t->dtype != DType::kBF16)
    return make_error(fmt::format("{}: {} is {}; its rows of {} taps need a plain float type", f.source, name,
                                  t->type_name, taps));
  std::vector<float> per_channel(size_t(taps * dim));  // [dim][taps], as stored
  dequantize_row(*t->dtype, t->data, per_channel.data(), taps * dim);
  lw.conv_taps.resize(per_channel.size());  // [taps][dim]: the kernel runs over channels
  for (int64_t c = 0; c < dim; ++c)
    for (int64_t k = 0; k < taps; ++k) lw.conv_taps[size_t(k * dim + c)] = per_channel[size_t(c * taps + k)];
  return Status::ok_status();
}

// A gated DeltaNet layer's projections, convolution taps (GGUF [conv_kernel, conv_dim], per channel), decay and
// norm vectors.
Status load_delta_net(const TensorSet& f, const ModelConfig& c, int32_t l, LayerWeights& lw) {
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, conv_dim = c.delta_net_conv_dim(), value_dim = c.delta_net_value_dim();
  const int64_t v_heads = c.delta_net_v_heads, taps = c.delta_net_conv_kernel;
  if (f.find(t::block_tensor(l, t::kSsmIn)) != nullptr)
    return make_error(fmt::format("{}: {} is the older fused [q, k, v, z] projection, which pagoda does not read; "
                                  "convert the model again with a current converter (attn_qkv and attn_gate)",
                                  f.source, t::block_tensor(l, t::kSsmIn)));
  PAGODA_ASSIGN_OR_RETURN(lw.dn_qkv, matrix(f, t::block_tensor(l, t::kAttnQkv), conv_dim, dim));
  PAGODA_ASSIGN_OR_RETURN(lw.dn_z, matrix(f, t::block_tensor(l, t::kAttnGate), value_dim, dim));
  if (c.delta_net_grouped_v_heads) {
    PAGODA_ASSIGN_OR_RETURN(lw.dn_beta_alpha, matrix(f, t::block_tensor(l, t::kSsmBetaAlpha), 2 * v_heads, dim));
  } else {
    PAGODA_ASSIGN_OR_RETURN(lw.dn_beta, matrix(f, t::block_tensor(l, t::kSsmBeta), v_heads, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.dn_alpha, matrix(f, t::block_tensor(l, t::kSsmAlpha), v_heads, dim));
  }
  PAGODA_ASSIGN_OR_RETURN(lw.dn_out, matrix(f, t::block_tensor(l, t::kSsmOut), dim, value_dim));
  PAGODA_ASSIGN_OR_RETURN(lw.dn_dt_bias, vector_f32(f, t::block_tensor(l, t::kSsmDt, "bias"), v_heads));
  PAGODA_ASSIGN_OR_RETURN(lw.dn_a, vector_f32(f, t::block_tensor(l, t::kSsmA, ""), v_heads));
  PAGODA_ASSIGN_OR_RETURN(lw.dn_norm, vector_f32(f, t::block_tensor(l, t::kSsmNorm), c.delta_net_head_dim));
  const std::string name = t::block_tensor(l, t::kSsmConv1d);
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* conv, find(f, name, {taps, conv_dim}));
  if (*conv->dtype != DType::kF32 && *conv->dtype != DType::kF16 && *conv->dtype != DType::kBF16)
    return make_error(fmt::format("{}: {} is {}; its rows of {} taps need a plain float type", f.source, name,
                                  conv->type_name, taps));
  std::vector<float> per_channel(size_t(taps * conv_dim));  // [conv_dim][taps], as stored
  dequantize_row(*conv->dtype, conv->data, per_channel.data(), taps * conv_dim);
  lw.conv_taps.resize(per_channel.size());  // [taps][conv_dim]
  for (int64_t ch = 0; ch < conv_dim; ++ch)
    for (int64_t k = 0; k < taps; ++k) lw.conv_taps[size_t(k * conv_dim + ch)] = per_channel[size_t(ch * taps + k)];
  return Status::ok_status();
}

// A multi-head latent attention layer's projections (ModelConfig::is_mla): the query's (attn_q, or the q LoRA), the
// latent's with its norm, and each head's attn_k_b and attn_v_b slice of their stacked [.., .., num_heads] tensors.
Status load_mla(const TensorSet& f, const ModelConfig& c, int32_t l, LayerWeights& lw) {
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, heads = c.num_heads, latent = c.mla_kv_lora_rank;
  if (f.find(t::block_tensor(l, t::kAttnKvB)) != nullptr)
    return make_error(fmt::format("{}: {} is the unsplit latent projection of a file converted before llama.cpp split "
                                  "it for the absorbed attention, which pagoda does not read; convert the model again",
                                  f.source, t::block_tensor(l, t::kAttnKvB)));
  const int64_t q_rows = heads * c.mla_key_dim;
  if (c.mla_q_lora_rank > 0) {
    const int64_t rank = c.mla_q_lora_rank;
    PAGODA_ASSIGN_OR_RETURN(lw.mla_q_a, matrix(f, t::block_tensor(l, t::kAttnQA), rank, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.mla_q_a_norm, vector_f32(f, t::block_tensor(l, t::kAttnQANorm), rank));
    PAGODA_ASSIGN_OR_RETURN(lw.mla_q_b, matrix(f, t::block_tensor(l, t::kAttnQB), q_rows, rank));
  } else {
    PAGODA_ASSIGN_OR_RETURN(lw.wq, matrix(f, t::block_tensor(l, t::kAttnQ), q_rows, dim));
  }
  PAGODA_ASSIGN_OR_RETURN(lw.mla_kv_a, matrix(f, t::block_tensor(l, t::kAttnKvAMqa), latent + c.rope_dim, dim));
  PAGODA_ASSIGN_OR_RETURN(lw.mla_kv_a_norm, vector_f32(f, t::block_tensor(l, t::kAttnKvANorm), latent));
  PAGODA_ASSIGN_OR_RETURN(lw.mla_k_b,
                          expert_matrices(f, t::block_tensor(l, t::kAttnKB), heads, latent, c.mla_nope_dim()));
  PAGODA_ASSIGN_OR_RETURN(lw.mla_v_b, expert_matrices(f, t::block_tensor(l, t::kAttnVB), heads, c.mla_value_dim, latent));
  PAGODA_ASSIGN_OR_RETURN(lw.wo, matrix(f, t::block_tensor(l, t::kAttnOutput), dim, heads * c.mla_value_dim));
  for (const WeightView* w : {&lw.wq, &lw.mla_q_a, &lw.mla_q_b, &lw.mla_kv_a, &lw.wo})
    if (w->input_scale != nullptr)
      return make_error(fmt::format("{}: blk.{}: the latent attention's matrices cannot take an AWQ input scale",
                                    f.source, l));
  return Status::ok_status();
}

}  // namespace

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, size_t(n) * sizeof(float)); break;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_float(static_cast<const uint16_t*>(src)[i]);
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
      break;
    case DType::kQ8_0: quant::dequantize_row_q8_0(static_cast<const quant::BlockQ8_0*>(src), dst, n); break;
    case DType::kQ4_0: quant::dequantize_row_q4_0(static_cast<const quant::BlockQ4_0*>(src), dst, n); break;
    case DType::kQ4_K: quant::dequantize_row_q4_K(static_cast<const quant::BlockQ4_K*>(src), dst, n); break;
    case DType::kQ5_K: quant::dequantize_row_q5_K(static_cast<const quant::BlockQ5_K*>(src), dst, n); break;
    case DType::kQ6_K: quant::dequantize_row_q6_K(static_cast<const quant::BlockQ6_K*>(src), dst, n); break;
    case DType::kIQ4_NL: quant::dequantize_row_iq4_nl(static_cast<const quant::BlockIQ4_NL*>(src), dst, n); break;
    case DType::kIQ4_XS: quant::dequantize_row_iq4_xs(static_cast<const quant::BlockIQ4_XS*>(src), dst, n); break;
    case DType::kMXFP4: quant::dequantize_row_mxfp4(static_cast<const quant::BlockMXFP4*>(src), dst, n); break;
    case DType::kQ2_K: quant::dequantize_row_q2_K(static_cast<const quant::BlockQ2_K*>(src), dst, n); break;
    case DType::kQ3_K: quant::dequantize_row_q3_K(static_cast<const quant::BlockQ3_K*>(src), dst, n); break;
    case DType::kQ7_K: quant::dequantize_row_q7_K(static_cast<const quant::BlockQ7_K*>(src), dst, n); break;
    case DType::kQ4_1: quant::dequantize_row_q4_1(static_cast<const quant::BlockQ4_1*>(src), dst, n); break;
    case DType::kQ5_1: quant::dequantize_row_q5_1(static_cast<const quant::BlockQ5_1*>(src), dst, n); break;
    case DType::kQ2_Kx8:
    case DType::kQ3_Kx8:
    case DType::kQ4_Kx8:
    case DType::kQ5_Kx8:
    case DType::kQ6_Kx8:
    case DType::kQ7_Kx8:
    case DType::kIQ4_NLx8:
    case DType::kIQ4_XSx8:
    case DType::kMXFP4x8:
    case DType::kQ4_1x8:
    case DType::kQ5_1x8:
    case DType::kQ4_0x8:
    case DType::kQ8_0x8:
    case DType::kInt8x8:
    case DType::kAwqInt4x8:
    case DType::kQ4_0x16:
    case DType::kQ8_0x16:
    case DType::kAwqInt4x16:
    case DType::kInt8x16:
      PAGODA_CHECK(false, "a row of an interleaved matrix is spread over its group: embeddings are never repacked");
    case DType::kInt8: quant::dequantize_rows_int8(src, dst, 1, n); break;
    case DType::kAwqInt4G32:
    case DType::kAwqInt4G64:
    case DType::kAwqInt4G128: quant::dequantize_row_awq_int4(src, dst, n, dtype_block_size(dtype)); break;
  }
}

Result<ModelWeights> model_weights_from_gguf(const format::GgufFile& file, const ModelConfig& config) {
  return model_weights_from_tensors(tensor_set_from_gguf(file), config);
}

Result<ModelWeights> model_weights_from_tensors(const TensorSet& f, const ModelConfig& c) {
  ModelWeights w;
  w.owned_storage = f.owned;  // tensors converted at load live there
  const int64_t dim = c.dim, vocab = c.vocab_size;
  PAGODA_ASSIGN_OR_RETURN(w.token_embd, matrix(f, format::gguf_tensor::kTokenEmbedding, vocab, dim));
  if (w.token_embd.input_scale != nullptr)
    return make_error(
        fmt::format("{}: token_embd.weight has an AWQ input scale, which an embedding lookup cannot undo", f.source));
  // Layers are appended as their tensors are found (never sized by num_layers up front): a block count that the
  // tensors do not back fails at the first missing one, having allocated only what the file holds.
  if (size_t(c.num_layers) > f.tensors.size())
    return make_error(fmt::format("{}: the config has {} layers but there are only {} tensors", f.source, c.num_layers,
                                  f.tensors.size()));
  if (c.per_layer_input_dim > 0) {
    const int64_t all = int64_t(c.num_layers) * c.per_layer_input_dim;
    PAGODA_ASSIGN_OR_RETURN(w.per_layer_token_embd,
                            matrix(f, format::gguf_tensor::kPerLayerTokenEmbedding, vocab, all));
    PAGODA_ASSIGN_OR_RETURN(w.per_layer_model_proj, matrix(f, format::gguf_tensor::kPerLayerModelProj, all, dim));
    PAGODA_ASSIGN_OR_RETURN(w.per_layer_proj_norm,
                            vector_f32(f, format::gguf_tensor::kPerLayerProjNorm, c.per_layer_input_dim));
    if (w.per_layer_token_embd.input_scale != nullptr)
      return make_error(fmt::format("{}: {} has an AWQ input scale, which an embedding lookup cannot undo", f.source,
                                    format::gguf_tensor::kPerLayerTokenEmbedding));
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerWeights& lw = w.layers.emplace_back();
    const std::string p = fmt::format("blk.{}.", l);
    // Gemma 4's layers differ in head size and FFN width; a KV-sharing layer has no K/V projections.
    const int64_t q_dim = c.layer_q_dim(l), kv_dim = c.layer_kv_dim(l), hidden = c.layer_hidden_dim(l);
    const int64_t head_dim = c.layer_head_dim(l);
    if (c.pre_norms) {
      PAGODA_ASSIGN_OR_RETURN(lw.attn_norm,
                              vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnNorm), dim));
    }
    if (c.is_conv_layer(l) && c.is_delta_net()) {
      PAGODA_RETURN_IF_ERROR(load_delta_net(f, c, l, lw));
    } else if (c.is_conv_layer(l)) {
      PAGODA_RETURN_IF_ERROR(load_short_conv(f, c, l, lw));
    } else if (c.is_mla()) {
      PAGODA_RETURN_IF_ERROR(load_mla(f, c, l, lw));
    } else {
      if (f.find(format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQkv)) != nullptr) {
        // Phi-3: Q, K and V as one matrix, rows in that order; each is a view of its rows.
        PAGODA_ASSIGN_OR_RETURN(
            const WeightView qkv,
            matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQkv), q_dim + 2 * kv_dim, dim));
        if (qkv.input_scale != nullptr || dtype_is_row_interleaved(qkv.dtype))
          return make_error(fmt::format("{}: {}attn_qkv.weight cannot be split in its type", f.source, p));
        lw.wq = row_range(qkv, 0, q_dim);
        lw.wk = row_range(qkv, q_dim, kv_dim);
        lw.wv = row_range(qkv, q_dim + kv_dim, kv_dim);
      } else {
        PAGODA_ASSIGN_OR_RETURN(lw.wq, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQ),
                                              c.attn_output_gate ? 2 * q_dim : q_dim, dim));
        if (c.writes_kv(l)) {
          PAGODA_ASSIGN_OR_RETURN(
              lw.wk, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnK), kv_dim, dim));
          if (!c.layer_v_is_k(l)) {  // else V is K's projection
            PAGODA_ASSIGN_OR_RETURN(
                lw.wv, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnV), kv_dim, dim));
          }
        }
      }
      PAGODA_ASSIGN_OR_RETURN(
          lw.wo, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnOutput), dim, q_dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.bq,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQ, "bias"), q_dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.bk,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnK, "bias"), kv_dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.bv,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnV, "bias"), kv_dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.bo,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnOutput, "bias"), dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.sinks,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnSinks), c.num_heads));
      PAGODA_ASSIGN_OR_RETURN(
          lw.q_norm,
          optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQNorm),
                              c.qk_norm_whole ? q_dim : head_dim));
      if (c.writes_kv(l)) {
        PAGODA_ASSIGN_OR_RETURN(
            lw.k_norm, optional_vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnKNorm),
                                           c.qk_norm_whole ? kv_dim : head_dim));
      }
    }
    if (c.post_norms) {
      PAGODA_ASSIGN_OR_RETURN(
          lw.attn_post_norm,
          vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kPostAttentionNorm), dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.ffn_post_norm,
          vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kPostFfwNorm), dim));
    }
    if (c.pre_norms) {
      const char* ffn_norm = c.ffn_norm_is_post_attention_norm ? format::gguf_tensor::kPostAttentionNorm
                                                               : format::gguf_tensor::kFfnNorm;
      PAGODA_ASSIGN_OR_RETURN(lw.ffn_norm, vector_f32(f, format::gguf_tensor::block_tensor(l, ffn_norm), dim));
    }
    if (c.is_moe_layer(l)) {
      const int64_t num_experts = c.num_experts, expert_hidden = c.expert_hidden_dim;
      PAGODA_ASSIGN_OR_RETURN(
          lw.router,
          matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGateInp), num_experts, dim));
      if (lw.router.input_scale != nullptr)
        return make_error(fmt::format("{}: {}ffn_gate_inp.weight has an AWQ input scale", f.source, p));
      std::vector<WeightView> gates, ups;
      const std::string gate_up_name = format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGateUpExps);
      if (f.find(gate_up_name) != nullptr) {
        // Gate and up in one stacked tensor (llama.cpp's converter for Gemma 4): each expert's gate rows, then its up
        // rows, each a view of its rows.
        PAGODA_ASSIGN_OR_RETURN(const std::vector<WeightView> gate_ups,
                                expert_matrices(f, gate_up_name, num_experts, 2 * expert_hidden, dim));
        for (const WeightView& gu : gate_ups) {
          if (dtype_is_row_interleaved(gu.dtype))
            return make_error(fmt::format("{}: {} cannot be split in its type", f.source, gate_up_name));
          gates.push_back(row_range(gu, 0, expert_hidden));
          ups.push_back(row_range(gu, expert_hidden, expert_hidden));
        }
      } else {
        PAGODA_ASSIGN_OR_RETURN(gates,
                                expert_matrices(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGateExps),
                                                num_experts, expert_hidden, dim));
        PAGODA_ASSIGN_OR_RETURN(ups,
                                expert_matrices(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUpExps),
                                                num_experts, expert_hidden, dim));
      }
      PAGODA_ASSIGN_OR_RETURN(
          auto downs, expert_matrices(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnDownExps),
                                      num_experts, dim, expert_hidden));
      for (int64_t e = 0; e < num_experts; ++e)
        lw.experts.push_back(ExpertWeights{gates[size_t(e)], ups[size_t(e)], downs[size_t(e)]});
      using format::gguf_tensor::block_tensor;
      PAGODA_ASSIGN_OR_RETURN(
          lw.router_bias,
          optional_vector_f32(f, block_tensor(l, format::gguf_tensor::kFfnGateInp, "bias"), num_experts));
      PAGODA_ASSIGN_OR_RETURN(lw.expert_gate_bias,
                              optional_expert_biases(f, block_tensor(l, format::gguf_tensor::kFfnGateExps, "bias"),
                                                     expert_hidden, num_experts));
      PAGODA_ASSIGN_OR_RETURN(lw.expert_up_bias,
                              optional_expert_biases(f, block_tensor(l, format::gguf_tensor::kFfnUpExps, "bias"),
                                                     expert_hidden, num_experts));
      PAGODA_ASSIGN_OR_RETURN(
          lw.expert_down_bias,
          optional_expert_biases(f, block_tensor(l, format::gguf_tensor::kFfnDownExps, "bias"), dim, num_experts));
      PAGODA_ASSIGN_OR_RETURN(
          lw.expert_down_scale,
          optional_vector_f32(f, block_tensor(l, format::gguf_tensor::kFfnDownExps, "scale"), num_experts));
      PAGODA_ASSIGN_OR_RETURN(
          lw.expert_selection_bias,
          optional_vector_f32(f, block_tensor(l, format::gguf_tensor::kFfnExpProbsB, "bias"), num_experts));
      if (c.shared_expert_hidden_dim > 0) PAGODA_RETURN_IF_ERROR(load_shared_expert(f, c, l, lw));
      if (c.moe_beside_dense_ffn) {
        PAGODA_ASSIGN_OR_RETURN(lw.router_input_scale,
                                vector_f32(f, block_tensor(l, format::gguf_tensor::kFfnGateInp, "scale"), dim));
        PAGODA_ASSIGN_OR_RETURN(lw.ffn_pre_norm_2, vector_f32(f, block_tensor(l, format::gguf_tensor::kPreFfwNorm2), dim));
        PAGODA_ASSIGN_OR_RETURN(lw.ffn_post_norm_1,
                                vector_f32(f, block_tensor(l, format::gguf_tensor::kPostFfwNorm1), dim));
        PAGODA_ASSIGN_OR_RETURN(lw.ffn_post_norm_2,
                                vector_f32(f, block_tensor(l, format::gguf_tensor::kPostFfwNorm2), dim));
      }
    }
    // The dense FFN: every layer's but an MoE layer's, whose experts replace it (Gemma 4's run beside it).
    if (c.is_moe_layer(l) && !c.moe_beside_dense_ffn) continue;
    if (f.find(format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGate)) == nullptr &&
        f.find(format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUp)) != nullptr &&
        f.find(format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUp))->dims ==
            std::vector<int64_t>{dim, 2 * hidden}) {
      // Phi-3: gate and up as one matrix of 2 * hidden rows, gate's first.
      PAGODA_ASSIGN_OR_RETURN(
          const WeightView gate_up,
          matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUp), 2 * hidden, dim));
      if (gate_up.input_scale != nullptr || dtype_is_row_interleaved(gate_up.dtype))
        return make_error(fmt::format("{}: {}ffn_up.weight cannot be split in its type", f.source, p));
      lw.w_gate = row_range(gate_up, 0, hidden);
      lw.w_up = row_range(gate_up, hidden, hidden);
    } else {
      PAGODA_ASSIGN_OR_RETURN(
          lw.w_gate, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGate), hidden, dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.w_up, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUp), hidden, dim));
    }
    PAGODA_ASSIGN_OR_RETURN(
        lw.w_down, matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnDown), dim, hidden));
    if (c.per_layer_input_dim > 0) {
      const int64_t pl = c.per_layer_input_dim;
      PAGODA_ASSIGN_OR_RETURN(
          lw.per_layer_gate,
          matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kPerLayerInpGate), pl, dim));
      PAGODA_ASSIGN_OR_RETURN(
          lw.per_layer_proj,
          matrix(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kPerLayerProj), dim, pl));
      PAGODA_ASSIGN_OR_RETURN(
          lw.per_layer_post_norm,
          vector_f32(f, format::gguf_tensor::block_tensor(l, format::gguf_tensor::kPerLayerPostNorm), dim));
    }
    const std::string scale_name = format::gguf_tensor::block_tensor(l, format::gguf_tensor::kLayerOutputScale);
    if (f.find(scale_name) != nullptr) {
      PAGODA_ASSIGN_OR_RETURN(const std::vector<float> scale, vector_f32(f, scale_name, 1));
      lw.output_scale = scale[0];
    }
  }
  PAGODA_ASSIGN_OR_RETURN(w.output_norm, vector_f32(f,
                                                    c.output_norm_is_token_embd_norm
                                                        ? format::gguf_tensor::kTokenEmbeddingNorm
                                                        : format::gguf_tensor::kOutputNorm,
                                                    dim));
  if (f.find(format::gguf_tensor::kOutput) != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(w.output, matrix(f, format::gguf_tensor::kOutput, vocab, dim));
  } else {
    w.output = w.token_embd;  // tied embeddings, as llama.cpp does when output.weight is absent
  }
  const std::string cls_out_name = std::string(format::gguf_tensor::kClassifierOutputStem) + ".weight";
  if (const TensorRef* head = f.find(cls_out_name); head != nullptr && c.last_token_rank_head) {
    const int64_t outputs = head->dims.size() == 2 ? head->dims[1] : 0;
    if (outputs < 1 || outputs > kMaxRankOutputs)
      return make_error(fmt::format("{}: {} has shape {}, expected [{}, n] with n in 1..{}", f.source, cls_out_name,
                                    format::dims_string(head->dims), dim, kMaxRankOutputs));
    PAGODA_ASSIGN_OR_RETURN(w.cls_out, matrix(f, cls_out_name, outputs, dim));
  }
  return w;
}

}  // namespace pagoda
