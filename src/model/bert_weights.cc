// Finds and shape-checks every tensor of a bert-family GGUF.
#include "model/bert_weights.h"

#include <fmt/format.h>

#include "format/gguf_names.h"

namespace pagoda {
namespace {

namespace t = format::gguf_tensor;

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

}  // namespace

Result<BertWeights> bert_weights_from_tensors(const TensorSet& f, const ModelConfig& c) {
  if (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.dim)
    return make_error(fmt::format("{}: an encoder needs head_count_kv = head_count and head size x heads = "
                                  "embedding_length (got {} KV heads of {} for {} heads, width {})",
                                  f.source, c.num_kv_heads, c.head_dim, c.num_heads, c.dim));
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  BertWeights w;
  PAGODA_ASSIGN_OR_RETURN(w.token_embd, bert_matrix(f, t::kTokenEmbedding, c.vocab_size, dim));
  PAGODA_ASSIGN_OR_RETURN(w.position_embd, bert_matrix(f, t::kPositionEmbedding, c.context_length, dim));
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
    PAGODA_ASSIGN_OR_RETURN(lw.wq, bert_matrix(f, block_tensor(l, t::kAttnQ), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.wk, bert_matrix(f, block_tensor(l, t::kAttnK), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.wv, bert_matrix(f, block_tensor(l, t::kAttnV), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.wo, bert_matrix(f, block_tensor(l, t::kAttnOutput), dim, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.bq, bert_optional_vector_f32(f, block_tensor(l, t::kAttnQ, "bias"), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.bk, bert_optional_vector_f32(f, block_tensor(l, t::kAttnK, "bias"), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.bv, bert_optional_vector_f32(f, block_tensor(l, t::kAttnV, "bias"), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.bo, bert_optional_vector_f32(f, block_tensor(l, t::kAttnOutput, "bias"), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.attn_out_norm, bert_vector_f32(f, block_tensor(l, t::kAttnOutputNorm), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.attn_out_norm_b, bert_vector_f32(f, block_tensor(l, t::kAttnOutputNorm, "bias"), dim));
    PAGODA_ASSIGN_OR_RETURN(lw.w_up, bert_matrix(f, block_tensor(l, t::kFfnUp), hidden, dim));
    PAGODA_ASSIGN_OR_RETURN(lw.w_down, bert_matrix(f, block_tensor(l, t::kFfnDown), dim, hidden));
    PAGODA_ASSIGN_OR_RETURN(lw.b_up, bert_optional_vector_f32(f, block_tensor(l, t::kFfnUp, "bias"), hidden));
    PAGODA_ASSIGN_OR_RETURN(lw.b_down, bert_optional_vector_f32(f, block_tensor(l, t::kFfnDown, "bias"), dim));
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
