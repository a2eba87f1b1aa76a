// The plans of a split model: the tensor-parallel shard (heads, K/V heads kept whole or replicated, FFN units,
// vocabulary), the pipeline stages (contiguous layers), and the micro-batches a step is cut into.
#include "parallel/micro_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "model/pipeline_stage.h"
#include "model/tensor_parallel_shard.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

ModelConfig tinyllama_config() {
  ModelConfig c;
  c.dim = 2048;
  c.hidden_dim = 5632;
  c.num_layers = 22;
  c.num_heads = 32;
  c.num_kv_heads = 4;
  c.head_dim = 64;
  c.vocab_size = 32000;
  return c;
}

TEST(TensorParallelPlanTest, TwoRanksSplitHeadsKvHeadsFfnAndVocabulary) {
  const ModelConfig c = tinyllama_config();
  Result<TensorParallelShard> r1 = plan_tensor_parallel_shard(c, 1, 2);
  ASSERT_TRUE(r1.ok()) << r1.error();
  EXPECT_EQ(r1->q_head_begin, 16);
  EXPECT_EQ(r1->num_q_heads, 16);
  EXPECT_EQ(r1->kv_head_begin, 2);
  EXPECT_EQ(r1->num_kv_heads, 2);
  EXPECT_EQ(r1->hidden_begin, 2816);
  EXPECT_EQ(r1->hidden_len, 2816);
  EXPECT_EQ(r1->vocab_begin, 16000);
  EXPECT_EQ(r1->vocab_len, 16000);
  EXPECT_EQ(r1->vocab_counts, (std::vector<int64_t>{16000, 16000}));
  const ModelConfig local = shard_model_config(c, *r1);
  EXPECT_EQ(local.num_heads, 16);
  EXPECT_EQ(local.num_kv_heads, 2);
  EXPECT_EQ(local.hidden_dim, 2816);
  EXPECT_EQ(local.vocab_size, 32000);  // logits are gathered whole
  EXPECT_EQ(local.dim, 2048);
}

TEST(TensorParallelPlanTest, WithFewerKvHeadsThanRanksEachKeepsTheOneItsQueryHeadsShare) {
  const ModelConfig c = tinyllama_config();  // 4 K/V heads, groups of 8 query heads
  for (int32_t rank = 0; rank < 8; ++rank) {
    Result<TensorParallelShard> s = plan_tensor_parallel_shard(c, rank, 8);
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->num_q_heads, 4);
    EXPECT_EQ(s->num_kv_heads, 1);
    EXPECT_EQ(s->kv_head_begin, s->q_head_begin / 8) << rank;
  }
}

TEST(TensorParallelPlanTest, UnevenVocabularyAndImpossibleSplits) {
  ModelConfig c = tinyllama_config();
  c.vocab_size = 32001;
  Result<TensorParallelShard> s0 = plan_tensor_parallel_shard(c, 0, 2);
  ASSERT_TRUE(s0.ok());
  EXPECT_EQ(s0->vocab_counts, (std::vector<int64_t>{16001, 16000}));
  Result<TensorParallelShard> s1 = plan_tensor_parallel_shard(c, 1, 2);
  EXPECT_EQ(s1->vocab_begin, 16001);
  Result<TensorParallelShard> three = plan_tensor_parallel_shard(c, 0, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_THAT(three.error(), HasSubstr("32 attention heads do not split over 3 ranks"));
  c.num_heads = 48;  // 4 K/V heads over 6 ranks: neither split nor replicated whole
  c.hidden_dim = 5634;
  EXPECT_THAT(plan_tensor_parallel_shard(c, 0, 6).error(), HasSubstr("key/value heads"));
  EXPECT_FALSE(plan_tensor_parallel_shard(c, 2, 2).ok());  // rank outside the group
}

TEST(PipelinePlanTest, LayersSplitEvenlyWithTheExtraOnesFirst) {
  ModelConfig c = tinyllama_config();  // 22 layers
  std::vector<std::pair<int32_t, int32_t>> ranges;
  for (int32_t s = 0; s < 4; ++s) {
    Result<PipelineStage> st = plan_pipeline_stage(c, s, 4);
    ASSERT_TRUE(st.ok()) << st.error();
    ranges.emplace_back(st->layer_begin, st->layer_end);
    EXPECT_EQ(st->first(), s == 0);
    EXPECT_EQ(st->last(), s == 3);
    EXPECT_EQ(stage_model_config(c, *st).num_layers, st->layer_end - st->layer_begin);
  }
  EXPECT_EQ(ranges, (std::vector<std::pair<int32_t, int32_t>>{{0, 6}, {6, 12}, {12, 17}, {17, 22}}));
  // A stage keeps its own layers' NoPE marks (SmolLM3's every 4th layer): stage 1 holds layers 6..11.
  for (int32_t l = 0; l < c.num_layers; ++l) c.layer_skips_rope.push_back((l + 1) % 4 == 0);
  Result<PipelineStage> second = plan_pipeline_stage(c, 1, 4);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(stage_model_config(c, *second).layer_skips_rope, (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
  c.layer_skips_rope.clear();
  c.num_layers = 2;
  EXPECT_THAT(plan_pipeline_stage(c, 0, 4).error(), HasSubstr("2 layers do not split over 4 stages"));
  EXPECT_FALSE(plan_pipeline_stage(c, 2, 2).ok());
}

TEST(PipelinePlanTest, EachStageKeepsItsLayersTheFirstTheEmbeddingTheLastTheClassifier) {
  ModelConfig c = tinyllama_config();
  c.num_layers = 3;
  int dummy[4] = {};
  ModelWeights full;
  full.token_embd.data = &dummy[0];
  full.output.data = &dummy[1];
  full.output_norm = {1.0f};
  full.layers.resize(3);
  for (int32_t l = 0; l < 3; ++l) full.layers[size_t(l)].attn_norm = {float(l)};
  const ModelWeights first = stage_model_weights(full, *plan_pipeline_stage(c, 0, 2));
  const ModelWeights last = stage_model_weights(full, *plan_pipeline_stage(c, 1, 2));
  ASSERT_EQ(first.layers.size(), 2u);
  ASSERT_EQ(last.layers.size(), 1u);
  EXPECT_EQ(last.layers[0].attn_norm, std::vector<float>{2.0f});
  EXPECT_EQ(first.token_embd.data, &dummy[0]);
  EXPECT_EQ(first.output.data, nullptr);
  EXPECT_TRUE(first.output_norm.empty());
  EXPECT_EQ(last.token_embd.data, nullptr);
  EXPECT_EQ(last.output.data, &dummy[1]);
}

// Two sequences: a 5-token prefill chunk at positions 3..7 and one decode token at position 9.
struct TwoSeqBatch {
  std::vector<TokenId> tokens{10, 11, 12, 13, 14, 20};
  std::vector<Pos> positions{3, 4, 5, 6, 7, 9};
  std::vector<int32_t> slots{3, 4, 5, 6, 7, 41};
  std::vector<int32_t> seq_starts{0, 5, 6};
  std::vector<int32_t> context_lens{8, 10};
  std::vector<BlockId> tables{0, 1, 2, 3};  // 2 blocks each
  std::vector<int32_t> logits_rows{4, 5};
  BatchView view() const {
    BatchView b;
    b.tokens = tokens;
    b.positions = positions;
    b.slot_ids = slots;
    b.seq_starts = seq_starts;
    b.context_lens = context_lens;
    b.block_tables = BlockTableView{tables.data(), 2, 2};
    b.logits_rows = logits_rows;
    return b;
  }
};

TEST(MicroBatchTest, ACutInsideASequenceShortensWhatTheFirstPartSees) {
  const TwoSeqBatch t;
  const BatchView batch = t.view();
  const std::vector<parallel::MicroBatch> parts = parallel::split_micro_batches(batch, 2);
  ASSERT_EQ(parts.size(), 2u);
  // Tokens [0, 3): the first 3 of sequence 0, which then sees positions 0..5.
  const BatchView a = parts[0].view(batch);
  EXPECT_EQ(a.num_tokens(), 3);
  EXPECT_EQ(a.tokens[0], 10);
  EXPECT_EQ(std::vector<int32_t>(a.seq_starts.begin(), a.seq_starts.end()), (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(std::vector<int32_t>(a.context_lens.begin(), a.context_lens.end()), std::vector<int32_t>{6});
  EXPECT_TRUE(a.logits_rows.empty());
  // Tokens [3, 6): the rest of sequence 0 and sequence 1, each with its logits row, rebased.
  const BatchView b = parts[1].view(batch);
  EXPECT_EQ(b.num_tokens(), 3);
  EXPECT_EQ(b.positions[0], 6);
  EXPECT_EQ(std::vector<int32_t>(b.seq_starts.begin(), b.seq_starts.end()), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(std::vector<int32_t>(b.context_lens.begin(), b.context_lens.end()), (std::vector<int32_t>{8, 10}));
  EXPECT_EQ(b.block_tables.num_seqs, 2);
  EXPECT_EQ(b.block_tables.row(1)[0], 2);
  EXPECT_EQ(std::vector<int32_t>(b.logits_rows.begin(), b.logits_rows.end()), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(parts[1].step_logits_idx, (std::vector<int32_t>{0, 1}));
}

TEST(MicroBatchTest, NeverMorePartsThanTokensAndEveryTokenOnce) {
  const TwoSeqBatch t;
  const BatchView batch = t.view();
  for (int32_t parts = 1; parts <= 9; ++parts) {
    const std::vector<parallel::MicroBatch> split = parallel::split_micro_batches(batch, parts);
    EXPECT_EQ(split.size(), size_t(std::min(parts, 6)));
    int32_t next = 0;
    size_t rows = 0;
    for (const parallel::MicroBatch& m : split) {
      EXPECT_EQ(m.token_begin, next);
      EXPECT_GT(m.token_end, m.token_begin);
      next = m.token_end;
      rows += m.logits_rows.size();
      EXPECT_EQ(m.seq_starts.back(), m.token_end - m.token_begin);
    }
    EXPECT_EQ(next, 6);
    EXPECT_EQ(rows, 2u);
  }
}

}  // namespace
}  // namespace pagoda
