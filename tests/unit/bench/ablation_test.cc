// The ablation's row plan (a baseline, then one switch more per row, in the order, cumulative), its
// ratio arithmetic, and the KV capacity column (sequences a fixed budget holds), against hand-computed values.
#include "bench/ablation_plan.h"

#include <gtest/gtest.h>

#include "bench/ablation_bench.h"
#include "bench/kv_capacity.h"

namespace pagoda::bench {
namespace {

// How many of the settings' switches differ.
int num_differences(const AblationSettings& a, const AblationSettings& b) {
  return int(a.weights != b.weights) + int(a.fusion != b.fusion) + int(a.attention != b.attention) +
         int(a.kv_layout != b.kv_layout) + int(a.kv_dtype != b.kv_dtype) + int(a.prefix_cache != b.prefix_cache) +
         int(a.batching != b.batching) + int(a.chunked_prefill != b.chunked_prefill);
}

TEST(AblationPlan, BaselineThenOneSwitchPerRowCumulative) {
  const std::vector<AblationRow> rows = ablation_plan();
  ASSERT_EQ(rows.size(), 10u);
  const AblationSettings& b = rows[0].settings;
  EXPECT_EQ(b.weights, AblationWeights::kF32);
  EXPECT_FALSE(b.fusion);
  EXPECT_EQ(b.attention, AttentionKind::kNaive);
  EXPECT_EQ(b.kv_layout, KvLayout::kContiguous);
  EXPECT_EQ(b.kv_dtype, KvDType::kF32);
  EXPECT_FALSE(b.prefix_cache);
  EXPECT_EQ(b.batching, BatchingMode::kStatic);
  EXPECT_FALSE(b.chunked_prefill);
  const std::vector<std::string> names{"baseline", "+fusion", "+q8_0",   "+q4_0",      "+flash",
                                       "+paged",   "+int8kv", "+prefix", "+contbatch", "+chunked"};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].name, names[i]);
    if (i > 0) {
      EXPECT_EQ(num_differences(rows[i - 1].settings, rows[i].settings), 1) << rows[i].name;
    }
  }
  // The last row has everything on: the engine's defaults, with Q4_0 weights and INT8 KV.
  const AblationSettings& all = rows.back().settings;
  EXPECT_EQ(all.weights, AblationWeights::kQ4_0);
  EXPECT_TRUE(all.fusion && all.prefix_cache && all.chunked_prefill);
  EXPECT_EQ(all.attention, AttentionKind::kFlash);
  EXPECT_EQ(all.kv_layout, KvLayout::kPaged);
  EXPECT_EQ(all.kv_dtype, KvDType::kInt8);
  EXPECT_EQ(all.batching, BatchingMode::kContinuous);
  EXPECT_EQ(rows[2].settings.weights, AblationWeights::kQ8_0);  // Q8_0 before INT4
}

TEST(AblationPlan, RatiosAreRowOverBaselineAndZeroWithoutABaseline) {
  AblationFigures base{200.0, 400.0, 50.0, 80.0, 10.0, 4};
  AblationFigures row{100.0, 500.0, 25.0, 20.0, 30.0, 10};
  const AblationRatios r = ratio_to_baseline(row, base);
  EXPECT_DOUBLE_EQ(r.ttft_mean, 0.5);
  EXPECT_DOUBLE_EQ(r.ttft_p99, 1.25);
  EXPECT_DOUBLE_EQ(r.tpot_mean, 0.5);
  EXPECT_DOUBLE_EQ(r.tpot_p99, 0.25);
  EXPECT_DOUBLE_EQ(r.output_tok_s, 3.0);
  EXPECT_DOUBLE_EQ(r.max_concurrent_seqs, 2.5);
  const AblationRatios self = ratio_to_baseline(base, base);
  EXPECT_DOUBLE_EQ(self.ttft_mean, 1.0);
  EXPECT_DOUBLE_EQ(self.max_concurrent_seqs, 1.0);
  const AblationRatios none = ratio_to_baseline(row, AblationFigures{});
  EXPECT_EQ(none.output_tok_s, 0.0);
  EXPECT_EQ(none.ttft_p99, 0.0);
}

TEST(KvCapacity, ContiguousPagedAndPrefixSharedByHand) {
  KvCapacityQuery q;
  q.bytes_per_block = 1000;
  q.budget_bytes = 128 * 1000 + 999;  // 128 whole blocks
  q.block_size = 16;
  q.max_seq_len = 512;       // 32 blocks
  q.seq_len = 80;            // 5 blocks
  q.shared_prefix_len = 40;  // 2 full blocks
  q.layout = KvLayout::kContiguous;
  EXPECT_EQ(max_concurrent_seqs(q), 4);  // 128 / 32
  q.layout = KvLayout::kPaged;
  EXPECT_EQ(max_concurrent_seqs(q), 25);  // 128 / 5
  q.prefix_cache = true;
  EXPECT_EQ(max_concurrent_seqs(q), 42);   // 1 + (128 - 5) / 3
  q.shared_prefix_len = 200;               // never the whole prompt: at most 4 of the 5 blocks
  EXPECT_EQ(max_concurrent_seqs(q), 124);  // 1 + 123 / 1
  q.budget_bytes = 4000;                   // under one sequence
  EXPECT_EQ(max_concurrent_seqs(q), 0);
}

TEST(KvCapacity, Int8KvHoldsMoreSequencesAtTheSameBudget) {
  ModelConfig mc;  // TinyLlama's attention shape, 2 layers
  mc.num_layers = 2;
  mc.num_heads = 32;
  mc.num_kv_heads = 4;
  mc.head_dim = 64;
  AblationEngineBase base;
  base.kv_budget_f32_tokens = 2048;
  EXPECT_EQ(kv_budget_bytes(base, mc), 2048 * 2 * 2 * 256 * 4);  // 8 MiB
  AblationWorkload w;                                            // 64 + 16 tokens: 5 blocks of 16
  AblationSettings s;
  s.kv_layout = KvLayout::kPaged;
  EXPECT_EQ(ablation_max_concurrent_seqs(s, base, mc, w), 128 / 5);
  s.kv_dtype = KvDType::kInt8;  // 256 int8 + 4 f32 scales per token per layer for K and V: 272 of 1024 bytes
  const int64_t int8_blocks = kv_budget_bytes(base, mc) / (2 * (256 + 16) * 2 * 16);
  EXPECT_EQ(ablation_max_concurrent_seqs(s, base, mc, w), int8_blocks / 5);
  EXPECT_EQ(ablation_engine_config(s, base, mc)->kv.num_blocks, int8_blocks);
}

}  // namespace
}  // namespace pagoda::bench
