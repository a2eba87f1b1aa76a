// Tensor-parallel sharding: which part of a Llama-family model one of T ranks holds (Megatron's split), and that
// part's weights cut from the full model's views. Rank r holds query heads [r H/T, (r+1) H/T) and the K/V heads
// they read (1/T of them, or the one shared by its query heads when there are fewer KV heads than ranks), FFN
// units [r F/T, (r+1) F/T), and a contiguous range of the vocabulary (embedding rows and classifier rows). So
// Q/K/V/gate/up/embedding/classifier rows and the matching columns of the output and down projections: rows
// are views into the file (no copy), columns are copied. Pure: no MPI, no threads.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"

namespace pagoda {

struct TensorParallelShard {
  int32_t rank = 0;
  int32_t size = 1;
  int32_t q_head_begin = 0, num_q_heads = 0;    // of the full model's query heads
  int32_t kv_head_begin = 0, num_kv_heads = 0;  // of its K/V heads
  int32_t hidden_begin = 0, hidden_len = 0;     // FFN units
  int32_t vocab_begin = 0, vocab_len = 0;       // token ids
  std::vector<int64_t> vocab_counts;            // every rank's vocab_len, in rank order
};

// Errors say which count does not divide: "tensor parallel 3: 32 attention heads do not split over 3 ranks".
Result<TensorParallelShard> plan_tensor_parallel_shard(const ModelConfig& config, int32_t rank, int32_t size);

// The shape this rank computes: its heads and FFN units; dim, layers and vocab_size stay the full model's (the
// logits are gathered whole).
ModelConfig shard_model_config(const ModelConfig& full, const TensorParallelShard& shard);

// The shard's weights from the full model's (file layout: before repacking). Column cuts must fall on the
// dtype's block boundaries (INT8 rows keep their scale, AWQ cuts fall on its groups); repacked types are refused.
Result<ModelWeights> shard_model_weights(const ModelWeights& full, const ModelConfig& full_config,
                                         const TensorParallelShard& shard);

}  // namespace pagoda
