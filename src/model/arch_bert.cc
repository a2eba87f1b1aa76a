// The bert family (BERT, and the cross-encoder rerankers built on it): an encoder, run by model/bert_model.h rather
// than the Llama block, with learned position embeddings and a GELU FFN. Also the encoder keys every encoder family
// reads (read_gguf_encoder, architecture.h): the LayerNorm epsilon (into rms_eps, the one norm epsilon of a config),
// attention.causal (absent or false: an encoder), and the token-type count llama.cpp keeps under the tokenizer's
// keys (default: token_types.weight's rows); written back as llama.cpp's converter names them. No HF family:
// pagoda reads BERT from GGUF only.
#include <fmt/format.h>

#include "format/gguf_names.h"
#include "model/architecture.h"

namespace pagoda {

Status read_gguf_encoder(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<float> eps, gguf_arch_f32(file, c, gguf_key::kLayerNormEpsilon));
  if (!eps)
    return make_error(
        fmt::format("{}: missing metadata key {}", file.name(), arch_key(c, gguf_key::kLayerNormEpsilon)));
  if (!(*eps > 0.0f))
    return make_error(fmt::format("{}: {} must be positive", file.name(), arch_key(c, gguf_key::kLayerNormEpsilon)));
  c.rms_eps = *eps;
  PAGODA_ASSIGN_OR_RETURN(std::optional<bool> causal, file.get_bool(arch_key(c, gguf_key::kAttentionCausal)));
  if (causal && *causal)
    return make_error(fmt::format("{}: {} is true, but pagoda runs {} as an encoder (non-causal attention) only",
                                  file.name(), arch_key(c, gguf_key::kAttentionCausal), c.architecture));
  c.encoder = true;
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> types, file.get_u32(gguf_key::kTokenTypeCount));
  if (types) {
    if (*types > 1024u)
      return make_error(fmt::format("{}: {} = {} is out of range", file.name(), gguf_key::kTokenTypeCount, *types));
    c.num_token_types = int32_t(*types);
  } else if (const format::GgufTensorInfo* t = file.find_tensor(format::gguf_tensor::kTokenTypes);
             t != nullptr && t->dims.size() == 2 && t->dims[1] > 0 && t->dims[1] <= 1024) {
    c.num_token_types = int32_t(t->dims[1]);
  }
  return Status::ok_status();
}

void write_gguf_encoder(const ModelConfig& c, format::GgufWriter& w) {
  w.set(arch_key(c, gguf_key::kLayerNormEpsilon), format::GgufValue::f32(c.rms_eps));
  w.set(arch_key(c, gguf_key::kAttentionCausal), format::GgufValue::boolean(false));
  if (c.num_token_types > 0) w.set(gguf_key::kTokenTypeCount, format::GgufValue::u32(uint32_t(c.num_token_types)));
}

namespace {

Status read_bert_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_encoder(file, c));
  c.activation = FfnActivation::kGeluTanh;
  return Status::ok_status();
}

}  // namespace

extern const ArchitectureFamily kBertFamily{
    .gguf_name = "bert", .read_gguf = read_bert_gguf, .write_gguf = write_gguf_encoder};

}  // namespace pagoda
