// The nomic-bert family (nomic-embed-text v1 and v1.5): an encoder run by model/bert_model.h with NeoX RoPE of Q and
// K (rope.freq_base; model/bert_weights.h picks it by the architecture name) in place of position embeddings, a fused
// QKV projection, and a SwiGLU FFN without biases, as llama.cpp's nomic-bert graph. Its keys are the encoder ones
// (read_gguf_encoder) and the common RoPE ones.
#include "model/architecture.h"

namespace pagoda {
namespace {

Status read_nomic_bert_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_RETURN_IF_ERROR(read_gguf_encoder(file, c));
  c.activation = FfnActivation::kSilu;
  return Status::ok_status();
}

}  // namespace

extern const ArchitectureFamily kNomicBertFamily{
    .gguf_name = "nomic-bert", .rope_neox = true, .read_gguf = read_nomic_bert_gguf, .write_gguf = write_gguf_encoder};

}  // namespace pagoda
