// BertWeights: views of an encoder's (the bert, jina-bert-v2 and nomic-bert families') tensors inside the GGUF mapping,
// checked against its ModelConfig at load: the token (and, for BERT, position) and token-type embeddings with their
// LayerNorm, each block's Q/K/V (separate, or row slices of a fused attn_qkv) and output projections with their
// optional Q/K LayerNorms, the FFN (plain, or gated: a gate tensor, or the gate fused into ffn_up's first half) with
// biases, its post-LayerNorms, and a reranker's classification head. 1-D tensors (norms, biases) become owned f32
// vectors. Does not run anything (model/bert_model.h does).
#pragma once

#include <pagoda/status.h>

#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tensor_set.h"

namespace pagoda {

// jina-bert-v2's second attention LayerNorm, llama.cpp's tensor stem (the common names are format/gguf_names.h's).
inline constexpr const char* kBertAttnNorm2Stem = "attn_norm_2";

// How an encoder family's tokens learn their positions: BERT's learned position embeddings (added to the input),
// nomic-bert's RoPE of Q and K (ModelConfig::rope_theta, rope_neox), or jina-bert-v2's ALiBi (query i's score of key
// j gains -slope_h * |i - j|, the slopes ggml's for alibi_max_bias, which llama.cpp fixes at 8 for it: no GGUF key).
enum class EncoderPositions : uint8_t { kLearned, kRope, kAlibi };

struct BertLayerWeights {
  WeightView wq, wk, wv, wo;                        // [dim, dim] each (q_dim = kv_dim = dim)
  std::vector<float> bq, bk, bv, bo;                // f32 [dim]; empty = none
  // LayerNorms of the whole Q and K rows before attention (jina-bert-v2); empty = none.
  std::vector<float> q_norm, q_norm_b, k_norm, k_norm_b;  // f32 [dim]
  std::vector<float> attn_out_norm, attn_out_norm_b;  // f32 [dim]: LayerNorm after attention's residual add
  // A second LayerNorm after adding the block's input again (jina-bert-v2's attn_norm_2); empty = none.
  std::vector<float> attn_norm_2, attn_norm_2_b;    // f32 [dim]
  WeightView w_gate;                                // [hidden, dim]; data null = a plain FFN act(up x)
  WeightView w_up, w_down;                          // [hidden, dim], [dim, hidden]
  std::vector<float> b_gate, b_up, b_down;          // f32 [hidden], [hidden], [dim]; empty = none
  std::vector<float> out_norm, out_norm_b;          // f32 [dim]: LayerNorm after the FFN's residual add
};

struct BertWeights {
  EncoderPositions positions = EncoderPositions::kLearned;  // by the family (ModelConfig::architecture)
  float alibi_max_bias = 0.0f;                              // kAlibi only
  WeightView token_embd;     // [vocab, dim]
  WeightView position_embd;  // [context_length, dim]; data null unless positions is kLearned
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
