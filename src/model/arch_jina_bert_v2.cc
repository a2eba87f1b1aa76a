// The jina-bert-v2 family (Jina's embeddings v2 and the jina-reranker-v1 cross-encoders): an encoder run by
// model/bert_model.h with ALiBi in place of position embeddings, optional LayerNorms of Q and K and a second one after
// attention, and a GEGLU FFN (a gate tensor, or the gate fused into the first half of ffn_up), as llama.cpp's
// jina-bert-v2 graph. Its keys are the encoder ones (read_gguf_encoder); ALiBi and its maximum bias (llama.cpp's
// fixed 8, which no GGUF key carries) are model/bert_weights.h's, picked by the architecture name.
#include "model/architecture.h"

namespace pagoda {
namespace {

Status read_jina_bert_v2_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_encoder(file, c));
  c.activation = FfnActivation::kGeluTanh;
  return Status::ok_status();
}

}  // namespace

extern const ArchitectureFamily kJinaBertV2Family{
    .gguf_name = "jina-bert-v2", .read_gguf = read_jina_bert_v2_gguf, .write_gguf = write_gguf_encoder};

}  // namespace pagoda
