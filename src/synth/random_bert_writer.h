// write_random_bert_model: a bert-family GGUF (model/arch_bert.cc) with a shape's sizes and random weights, in
// llama.cpp's tensor names and keys so llama.cpp runs the same file: token, position and token-type embeddings with
// their LayerNorm, Q/K/V/output and FFN biases, the two LayerNorms of each block, `<arch>.pooling_type` from the
// shape's embedding_pooling, and for "rank" a reranker's classification head (cls, cls.output: one score). Its
// vocabulary is a small synthetic WordPiece one ([PAD] [UNK] [CLS] [SEP] [MASK], letters, digits, punctuation and
// common English words, then unused slots). A shape with word_overlap_head gets constructed weights instead, whose
// head scores word overlap between the query and the document (a deterministic reranker whose order means something). Does not own the shapes (model_shapes.h) or the random values
// (random_model_writer.h).
#pragma once

#include <pagoda/status.h>

#include "synth/random_model_writer.h"

namespace pagoda::synth {

// o.shape.gguf_architecture must be "bert". Matrices (token embeddings included) in o.weight_type; position and
// token-type embeddings, norms and biases f32. LayerNorm scales in [0.5, 1.5).
Status write_random_bert_model(const RandomModelOptions& o);

}  // namespace pagoda::synth
