// BertWeights: views of an encoder's (the bert family's) tensors inside the GGUF mapping, checked against its
// ModelConfig at load: the token, position and token-type embeddings with their LayerNorm, each block's Q/K/V/output
// projections and FFN (with biases) and its two post-LayerNorms, and a reranker's classification head. 1-D tensors
// (norms, biases) become owned f32 vectors. Does not run anything (model/bert_model.h does).
#pragma once

#include <pagoda/status.h>

#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tensor_set.h"

namespace pagoda {

struct BertLayerWeights {
  WeightView wq, wk, wv, wo;                        // [dim, dim] each (q_dim = kv_dim = dim)
  std::vector<float> bq, bk, bv, bo;                // f32 [dim]; empty = none
  std::vector<float> attn_out_norm, attn_out_norm_b;  // f32 [dim]: LayerNorm after attention's residual add
  WeightView w_up, w_down;                          // [hidden, dim], [dim, hidden]
  std::vector<float> b_up, b_down;                  // f32 [hidden], [dim]; empty = none
  std::vector<float> out_norm, out_norm_b;          // f32 [dim]: LayerNorm after the FFN's residual add
};

struct BertWeights {
  WeightView token_embd;     // [vocab, dim]
  WeightView position_embd;  // [context_length, dim]
  WeightView token_types;    // [num_token_types, dim]; data null = none
  std::vector<float> embd_norm, embd_norm_b;  // f32 [dim]
  std::vector<BertLayerWeights> layers;
  // The classification head of a cross-encoder (llama.cpp's rank pooling): an optional dense layer cls [dim, dim]
  // (+ bias, then tanh), then cls.output [num_outputs, dim] (+ bias). Both null: no head.
  WeightView cls, cls_out;
  std::vector<float> cls_b, cls_out_b;

  int32_t num_rank_outputs() const {
    return cls_out.data != nullptr ? int32_t(cls_out.num_rows) : cls.data != nullptr ? int32_t(cls.num_rows) : 0;
  }
};

// Errors name the tensor: "model.gguf: blk.1.attn_output_norm.bias has shape [32], expected [64]".
Result<BertWeights> bert_weights_from_tensors(const TensorSet& tensors, const ModelConfig& config);

}  // namespace pagoda
