// Tensor-parallel shards of K-quant matrices (model/tensor_parallel_shard.h): a column cut on super-block
// boundaries copies each row's super-blocks as they are; one inside a super-block is refused, naming the tensor and
// the 256-value blocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "model/model_weights.h"
#include "model/tensor_parallel_shard.h"

namespace pagoda {
namespace {

ModelConfig kquant_config(int32_t hidden_dim) {
  ModelConfig c;
  c.dim = 512;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.hidden_dim = hidden_dim;
  c.vocab_size = 512;
  c.num_layers = 1;
  return c;
}

// One layer with wo as q4_K and w_down as q6_K (random bytes: the cut never reads them).
ModelWeights kquant_weights(const ModelConfig& c, std::vector<uint8_t>& wo_bytes, std::vector<uint8_t>& down_bytes) {
  std::mt19937 rng(9);
  wo_bytes.resize(size_t(c.dim * dtype_row_bytes(DType::kQ4_K, c.q_dim())));
  down_bytes.resize(size_t(c.dim * dtype_row_bytes(DType::kQ6_K, c.hidden_dim)));
  for (uint8_t& b : wo_bytes) b = uint8_t(rng());
  for (uint8_t& b : down_bytes) b = uint8_t(rng());
  ModelWeights w;
  LayerWeights& l = w.layers.emplace_back();
  l.wo = {.dtype = DType::kQ4_K, .data = wo_bytes.data(), .num_rows = c.dim, .num_cols = c.q_dim()};
  l.w_down = {.dtype = DType::kQ6_K, .data = down_bytes.data(), .num_rows = c.dim, .num_cols = c.hidden_dim};
  return w;
}

TEST(TensorParallelKquantTest, ColumnCutsOnSuperBlocksCopyTheRowsBlocks) {
  const ModelConfig c = kquant_config(1024);
  std::vector<uint8_t> wo, down;
  const ModelWeights full = kquant_weights(c, wo, down);
  const Result<TensorParallelShard> shard = plan_tensor_parallel_shard(c, 1, 2);
  ASSERT_TRUE(shard.ok()) << shard.error();
  const Result<ModelWeights> part = shard_model_weights(full, c, *shard);
  ASSERT_TRUE(part.ok()) << part.error();
  const WeightView& w_down = part->layers[0].w_down;
  ASSERT_EQ(w_down.dtype, DType::kQ6_K);
  ASSERT_EQ(w_down.num_cols, 512);
  const WeightView& w_o = part->layers[0].wo;
  ASSERT_EQ(w_o.num_cols, 256);
  for (int64_t r = 0; r < c.dim; ++r) {
    // Rank 1 holds the second half of every row: super-blocks 2 and 3 of w_down's four, block 1 of wo's two.
    EXPECT_EQ(std::memcmp(w_down.row(r), down.data() + r * 4 * 210 + 2 * 210, 2 * 210), 0) << r;
    EXPECT_EQ(std::memcmp(w_o.row(r), wo.data() + r * 2 * 144 + 144, 144), 0) << r;
  }
}

TEST(TensorParallelKquantTest, ACutInsideASuperBlockIsRefused) {
  const ModelConfig c = kquant_config(768);  // 384 FFN units per rank: half a super-block over
  std::vector<uint8_t> wo, down;
  const ModelWeights full = kquant_weights(c, wo, down);
  const Result<TensorParallelShard> shard = plan_tensor_parallel_shard(c, 0, 2);
  ASSERT_TRUE(shard.ok()) << shard.error();
  const Result<ModelWeights> part = shard_model_weights(full, c, *shard);
  ASSERT_FALSE(part.ok());
  EXPECT_THAT(part.error(),
              ::testing::HasSubstr("blk.0.ffn_down (q6_K) cannot be cut at column 0 (+384): blocks of 256 "
                                   "values"));
}

}  // namespace
}  // namespace pagoda
