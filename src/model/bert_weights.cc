// Finds and shape-checks every tensor of an encoder family's GGUF (bert, jina-bert-v2, nomic-bert).
#include "model/bert_weights.h"

#include <fmt/format.h>

#include "format/gguf_names.h"

namespace pagoda {
namespace {

namespace t = format::gguf_tensor;

constexpr float kJinaAlibiMaxBias = 8.0f;  // llama.cpp's jina-bert-v2 hparams.f_max_alibi_bias

Result<const TensorRef*> bert_find(const TensorSet& f, const std::string& name, const std::vector<int64_t>& dims) {
  const TensorRef* r = f.find(name);
  if (r == nullptr) return make_error(fmt::format("{}: missing tensor {}", f.source, name));
  if (r->dims != dims)
    return make_error(fmt::format("{}: {} has shape {}, expected {}", f.source, name, format::dims_string(r->dims),
                                  format::dims_string(dims)));
  if (!r->dtype)
    return make_error(fmt::format("{}: tensor '{}' has type {}, which pagoda cannot run yet", f.source, name,
                                  r->type_name));
  if (r->data == nullptr) return make_error(fmt::format("{}: {} has no data of its own", f.source, name));
  if (f.find(format::awq_input_scale_name(name)) != nullptr)
    return make_error(fmt::format("{}: {} has an AWQ input scale, which an encoder cannot take", f.source, name));
  return r;
}

Result<WeightView> bert_matrix(const TensorSet& f, const std::string& name, int64_t rows, int64_t cols) {
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* r, bert_find(f, name, {cols, rows}));
  return WeightView{*r->dtype, r->data, rows, cols};
}

Result<WeightView> bert_optional_matrix(const TensorSet& f, const std::string& name, int64_t cols) {
  const TensorRef* r = f.find(name);
  if (r == nullptr) return WeightView{};
  if (r->dims.size() != 2 || r->dims[0] != cols || r->dims[1] <= 0)
    return make_error(fmt::format("{}: {} has shape {}, expected [{}, N]", f.source, name,
                                  format::dims_string(r->dims), cols));
  return bert_matrix(f, name, r->dims[1], cols);
}

Result<std::vector<float>> bert_vector_f32(const TensorSet& f, const std::string& name, int64_t n) {
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* r, bert_find(f, name, {n}));
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(*r->dtype, r->data, out.data(), n);
  return out;
}

Result<std::vector<float>> bert_optional_vector_f32(const TensorSet& f, const std::string& name, int64_t n) {
  if (f.find(name) == nullptr) return std::vector<float>();
  return bert_vector_f32(f, name, n);
}

std::string bert_stem_tensor(const char* stem, const char* kind) { return fmt::format("{}.{}", stem, kind); }

// Rows [first, first + count) of a matrix: a view into the same bytes.
WeightView bert_row_slice(const WeightView& w, int64_t first, int64_t count) {
  return WeightView{w.dtype, w.row(first), count, w.num_cols};
}

std::vector<float> bert_vector_slice(const std::vector<float>& v, int64_t first, int64_t count) {
  if (v.empty()) return {};
  return std::vector<float>(v.begin() + first, v.begin() + first + count);
}

// Q, K and V: separate attn_q/attn_k/attn_v, or one attn_qkv [3 dim, dim] (nomic-bert) cut into its three row blocks,
// its bias likewise (or separate biases beside it, as llama.cpp also reads).
Status bert_attention_projections(const TensorSet& f, int32_t l, int64_t dim, BertLayerWeights& lw) {
  using t::block_tensor;
  if (f.find(block_tensor(l, t::kAttnQkv)) != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(WeightView qkv, bert_matrix(f, block_tensor(l, t::kAttnQkv), 3 * dim, dim));
    lw.wq = bert_row_slice(qkv, 0, dim);
    lw.wk = bert_row_slice(qkv, dim, dim);
    lw.wv = bert_row_slice(qkv, 2 * dim, dim);
    PAGODA_ASSIGN_OR_RETURN(std::vector<float> b,
                            bert_optional_vector_f32(f, block_tensor(l, t::kAttnQkv, "bias"), 3 * dim));
    if (!b.empty()) {
      lw.bq = bert_vector_slice(b, 0, dim);
      lw.bk = bert_vector_slice(b, dim, dim);
      lw.bv = bert_vector_slice(b, 2 * dim, dim);
      return Status::ok_status();
    }
  } else {
    PAGODA_ASSIGN_OR_RETURN(lw.wq, bert_matrix(f, block_tensor(l, t::kAttnQ), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.wk, bert_matrix(f, block_tensor(l, t::kAttnK), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.wv, bert_matrix(f, block_tensor(l, t::kAttnV), dim, dim));
  }
  PAGODA_ASSIGN_OR_RETURN(lw.bq, bert_optional_vector_f32(f, block_tensor(l, t::kAttnQ, "bias"), dim));
  PAGODA_ASSIGN_OR_RETURN(lw.bk, bert_optional_vector_f32(f, block_tensor(l, t::kAttnK, "bias"), dim));
  PAGODA_ASSIGN_OR_RETURN(lw.bv, bert_optional_vector_f32(f, block_tensor(l, t::kAttnV, "bias"), dim));
  return Status::ok_status();
}

// An optional LayerNorm: weight and bias both, or neither.
Status bert_optional_norm(const TensorSet& f, const std::string& weight, const std::string& bias, int64_t dim,
                          std::vector<float>& w, std::vector<float>& b) {
  if (f.find(weight) == nullptr) {
    if (f.find(bias) != nullptr) return make_error(fmt::format("{}: {} is there without {}", f.source, bias, weight));
    return Status::ok_status();
  }
  PAGODA_ASSIGN_OR_RETURN(w, bert_vector_f32(f, weight, dim));
  PAGODA_ASSIGN_OR_RETURN(b, bert_vector_f32(f, bias, dim));
  return Status::ok_status();
}

// The FFN: up and down, and a gate where there is one: ffn_gate [hidden, dim], or (jina-bert-v2) ffn_up of 2 hidden
// rows whose first half is the gate (ggml_geglu's split), its bias split the same way. A family whose activation is
// SiLU (nomic-bert) must be gated; BERT's never is.
Status bert_ffn(const TensorSet& f, int32_t l, const ModelConfig& c, BertLayerWeights& lw) {
  using t::block_tensor;
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  const std::string up_name = block_tensor(l, t::kFfnUp), gate_name = block_tensor(l, t::kFfnGate);
  const TensorRef* up = f.find(up_name);
  const bool has_gate = f.find(gate_name) != nullptr;
  if (has_gate && c.architecture == "bert")
    return make_error(fmt::format("{}: {} is there, but a bert FFN has no gate", f.source, gate_name));
  if (!has_gate && c.architecture == "jina-bert-v2" && up != nullptr && up->dims.size() == 2 &&
      up->dims[1] == 2 * hidden) {
    PAGODA_ASSIGN_OR_RETURN(WeightView both, bert_matrix(f, up_name, 2 * hidden, dim));
    lw.w_gate = bert_row_slice(both, 0, hidden);
    lw.w_up = bert_row_slice(both, hidden, hidden);
    PAGODA_ASSIGN_OR_RETURN(std::vector<float> b,
                            bert_optional_vector_f32(f, block_tensor(l, t::kFfnUp, "bias"), 2 * hidden));
    lw.b_gate = bert_vector_slice(b, 0, hidden);
    lw.b_up = bert_vector_slice(b, hidden, hidden);
  } else {
    PAGODA_ASSIGN_OR_RETURN(lw.w_up, bert_matrix(f, up_name, hidden, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.b_up, bert_optional_vector_f32(f, block_tensor(l, t::kFfnUp, "bias"), hidden));
    if (has_gate) {
      PAGODA_ASSIGN_OR_RETURN(lw.w_gate, bert_matrix(f, gate_name, hidden, dim));
      PAGODA_ASSIGN_OR_RETURN(lw.b_gate, bert_optional_vector_f32(f, block_tensor(l, t::kFfnGate, "bias"), hidden));
    }
  }
  if (lw.w_gate.data == nullptr && c.activation == FfnActivation::kSilu)
    return make_error(fmt::format("{}: missing tensor {} ({}'s FFN is gated)", f.source, gate_name, c.architecture));
  PAGODA_ASSIGN_OR_RETURN(lw.w_down, bert_matrix(f, block_tensor(l, t::kFfnDown), dim, hidden));
  PAGODA_ASSIGN_OR_RETURN(lw.b_down, bert_optional_vector_f32(f, block_tensor(l, t::kFfnDown, "bias"), dim));
  return Status::ok_status();
}

}  // namespace

Result<BertWeights> bert_weights_from_tensors(const TensorSet& f, const ModelConfig& c) {
  if (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.dim)
    return make_error(fmt::format("{}: an encoder needs head_count_kv = head_count and head size x heads = "
                                  "embedding_length (got {} KV heads of {} for {} heads, width {})",
                                  f.source, c.num_kv_heads, c.head_dim, c.num_heads, c.dim));
  const int64_t dim = c.dim;
  BertWeights w;
  if (c.architecture == "jina-bert-v2") {
    w.positions = EncoderPositions::kAlibi;
    w.alibi_max_bias = kJinaAlibiMaxBias;
  } else if (c.architecture == "nomic-bert") {
    w.positions = EncoderPositions::kRope;
  }
  PAGODA_ASSIGN_OR_RETURN(w.token_embd, bert_matrix(f, t::kTokenEmbedding, c.vocab_size, dim));
  if (w.positions == EncoderPositions::kLearned) {
    PAGODA_ASSIGN_OR_RETURN(w.position_embd, bert_matrix(f, t::kPositionEmbedding, c.context_length, dim));
  } else if (f.find(t::kPositionEmbedding) != nullptr) {
    return make_error(fmt::format("{}: {} is there, but {} takes its positions from {}", f.source,
                                  t::kPositionEmbedding, c.architecture,
                                  w.positions == EncoderPositions::kRope ? "RoPE" : "ALiBi"));
  }
  if (f.find(t::kTokenTypes) != nullptr) {
    if (c.num_token_types <= 0)
      return make_error(fmt::format("{}: {} is there but the token-type count is 0", f.source, t::kTokenTypes));
    PAGODA_ASSIGN_OR_RETURN(w.token_types, bert_matrix(f, t::kTokenTypes, c.num_token_types, dim));
  }
  PAGODA_ASSIGN_OR_RETURN(w.embd_norm, bert_vector_f32(f, bert_stem_tensor(t::kTokenEmbeddingNormStem, "weight"), dim));
  PAGODA_ASSIGN_OR_RETURN(w.embd_norm_b, bert_vector_f32(f, bert_stem_tensor(t::kTokenEmbeddingNormStem, "bias"), dim));
  using t::block_tensor;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    BertLayerWeights lw;
    PAGODA_RETURN_IF_ERROR(bert_attention_projections(f, l, dim, lw));
    PAGODA_ASSIGN_OR_RETURN(lw.wo, bert_matrix(f, block_tensor(l, t::kAttnOutput), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.bo, bert_optional_vector_f32(f, block_tensor(l, t::kAttnOutput, "bias"), dim));
    PAGODA_RETURN_IF_ERROR(bert_optional_norm(f, block_tensor(l, t::kAttnQNorm), block_tensor(l, t::kAttnQNorm, "bias"),
                                              dim, lw.q_norm, lw.q_norm_b));
    PAGODA_RETURN_IF_ERROR(bert_optional_norm(f, block_tensor(l, t::kAttnKNorm), block_tensor(l, t::kAttnKNorm, "bias"),
                                              dim, lw.k_norm, lw.k_norm_b));
    PAGODA_RETURN_IF_ERROR(bert_optional_norm(f, block_tensor(l, kBertAttnNorm2Stem),
                                              block_tensor(l, kBertAttnNorm2Stem, "bias"), dim, lw.attn_norm_2,
                                              lw.attn_norm_2_b));
    PAGODA_ASSIGN_OR_RETURN(lw.attn_out_norm, bert_vector_f32(f, block_tensor(l, t::kAttnOutputNorm), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.attn_out_norm_b, bert_vector_f32(f, block_tensor(l, t::kAttnOutputNorm, "bias"), dim));
    PAGODA_RETURN_IF_ERROR(bert_ffn(f, l, c, lw));
    PAGODA_ASSIGN_OR_RETURN(lw.out_norm, bert_vector_f32(f, block_tensor(l, t::kLayerOutputNorm), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.out_norm_b, bert_vector_f32(f, block_tensor(l, t::kLayerOutputNorm, "bias"), dim));
    w.layers.push_back(std::move(lw));
  }
  PAGODA_ASSIGN_OR_RETURN(w.cls, bert_optional_matrix(f, bert_stem_tensor(t::kClassifierStem, "weight"), dim));
  if (w.cls.data != nullptr) {
    if (w.cls.num_rows != dim && f.find(bert_stem_tensor(t::kClassifierOutputStem, "weight")) != nullptr)
      return make_error(fmt::format("{}: cls.weight has {} outputs; a head with cls.output needs {}", f.source,
                                    w.cls.num_rows, dim));
    PAGODA_ASSIGN_OR_RETURN(w.cls_b, bert_optional_vector_f32(f, bert_stem_tensor(t::kClassifierStem, "bias"), w.cls.num_rows));
  }
  PAGODA_ASSIGN_OR_RETURN(w.cls_out, bert_optional_matrix(f, bert_stem_tensor(t::kClassifierOutputStem, "weight"), dim));
  if (w.cls_out.data != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(w.cls_out_b, bert_optional_vector_f32(f, bert_stem_tensor(t::kClassifierOutputStem, "bias"),
                                                             w.cls_out.num_rows));
  }
  return w;
}

}  // namespace pagoda
