// write_random_bert_model: an encoder family's GGUF (bert, jina-bert-v2, nomic-bert: model/arch_bert.cc and its
// siblings) with a shape's sizes and random weights, in llama.cpp's tensor names and keys so llama.cpp runs the same
// file: token (bert: and position) and token-type embeddings with their LayerNorm; Q/K/V (nomic-bert: one fused
// attn_qkv, no biases) and output, the FFN (bert: GELU with biases; jina-bert-v2: GEGLU, its gate fused into ffn_up's
// first half, with biases; nomic-bert: SwiGLU, no biases), the two LayerNorms of each block (jina-bert-v2 with the
// shape's encoder_qk_norms: LayerNorms of Q and K and a second one after attention); `<arch>.pooling_type` from the
// shape's embedding_pooling, and for "rank" a reranker's classification head (bert: cls, cls.output; jina-bert-v2:
// one cls row, as jina-reranker-v1's: one score). Its
// vocabulary is a small synthetic WordPiece one ([PAD] [UNK] [CLS] [SEP] [MASK], letters, digits, punctuation and
// common English words, then unused slots). A shape with word_overlap_head gets constructed weights instead, whose
// head scores word overlap between the query and the document (a deterministic reranker whose order means something).
// Does not own the shapes (model_shapes.h) or the random values (random_model_writer.h).
#pragma once

#include <pagoda/status.h>

#include "synth/random_model_writer.h"

namespace pagoda::synth {

// o.shape must be an encoder's (ModelShape::is_encoder). Matrices (token embeddings included) in o.weight_type;
// position and token-type embeddings, norms and biases f32. LayerNorm scales in [0.5, 1.5).
Status write_random_bert_model(const RandomModelOptions& o);

}  // namespace pagoda::synth
