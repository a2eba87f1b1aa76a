// plan_engine: the sizing policy the CLI and the public API share (no model file: a ModelConfig by hand).
#include "engine/engine_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kv/kv_storage.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t(1) << 30;

ModelConfig small_model() {  // TinyLlama's attention shape, 4 layers: 4 x 2 x 256 x 4 bytes = 8 KiB of f32 KV a token
  ModelConfig m;
  m.dim = 2048;
  m.hidden_dim = 5632;
  m.num_layers = 4;
  m.num_heads = 32;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  m.rope_dim = 64;
  m.vocab_size = 32000;
  m.context_length = 2048;
  return m;
}

TEST(EnginePlanTest, DefaultsComeFromTheModelAndTheFreeRam) {
  const ModelConfig m = small_model();
  Result<EnginePlan> p = plan_engine({}, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  const EngineConfig& c = p->config;
  EXPECT_EQ(c.max_seq_len, 2048);
  EXPECT_EQ(c.num_threads, 0);  // a 1B-class model: one thread per core
  EXPECT_EQ(c.scheduler.max_batched_tokens, kDefaultMaxBatchedTokens);
  EXPECT_EQ(c.max_queue, kDefaultMaxQueue);
  EXPECT_TRUE(c.kv.enable_prefix_cache);
  EXPECT_TRUE(c.scheduler.chunked_prefill);
  EXPECT_EQ(c.scheduler.max_prefill_tokens_with_decodes, kAutoPrefillCap);
  // 40% of 8 GiB in blocks of 16 tokens x 4 KiB (f16 K and V by default) would be 52428 blocks, more than 256
  // full-length sequences of 2048 need (32768 blocks, 2 GiB): the cap decides.
  EXPECT_EQ(c.kv_types, KvCacheTypes(KvDType::kF16));
  const int64_t per_block = KvStorage::bytes_per_block_for(m.kv_shape(), 16, KvDType::kF16);
  EXPECT_EQ(per_block, 16 * 4096);
  EXPECT_GT(int32_t(0.4 * double(8 * kGiB) / double(per_block)), 256 * 2048 / 16);
  EXPECT_EQ(p->kv_pool.num_blocks, 256 * 2048 / 16);
  EXPECT_EQ(c.kv.num_blocks, p->kv_pool.num_blocks);
  // Automatic batch: as many sequences as there are blocks and step tokens.
  EXPECT_EQ(c.scheduler.max_num_seqs, kDefaultMaxBatchedTokens);
}

TEST(EnginePlanTest, ALatentCacheSaysItHoldsNoV) {
  ModelConfig m = small_model();
  Result<EnginePlan> plain = plan_engine({}, m, 8 * kGiB);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_FALSE(plain->kv_pool.v_in_k);
  EXPECT_EQ(kv_stored_types_name(KvCacheTypes(KvDType::kQ8_0, KvDType::kF16), plain->kv_pool.v_in_k),
            "K q8_0 + V f16");
  m.mla_kv_lora_rank = 64;  // DeepSeek-V2's latent attention: one K row a token, V read from it
  m.num_kv_heads = 1;
  Result<EnginePlan> latent = plan_engine({}, m, 8 * kGiB);
  ASSERT_TRUE(latent.ok()) << latent.error();
  EXPECT_TRUE(latent->kv_pool.v_in_k);
  EXPECT_EQ(kv_stored_types_name(latent->config.kv_types, latent->kv_pool.v_in_k),
            "K f16 (V read from K: no V cache)");
}

TEST(EnginePlanTest, ABatchLargerThanTheStepBudgetRaisesIt) {
  EngineSettings s;
  s.max_num_seqs = 300;
  Result<EnginePlan> p = plan_engine(s, small_model(), 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.scheduler.max_num_seqs, 300);
  EXPECT_EQ(p->config.scheduler.max_batched_tokens, 300);
  s.max_batched_tokens = 64;  // an explicit budget is kept
  p = plan_engine(s, small_model(), 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.scheduler.max_batched_tokens, 64);
}

TEST(EnginePlanTest, AnEncodersStepHoldsItsLongestInputUnlessTold) {
  ModelConfig m = small_model();
  m.encoder = true;
  m.context_length = 512;
  Result<EnginePlan> p = plan_engine({}, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.scheduler.max_batched_tokens, 512);
  EngineSettings s;
  s.max_batched_tokens = 64;
  p = plan_engine(s, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.scheduler.max_batched_tokens, 64);
}

TEST(EnginePlanTest, ExplicitPoolsAndPrecisionsAreTaken) {
  EngineSettings s;
  s.kv_blocks = 100;
  s.block_size = 32;
  s.kv_types = KvDType::kInt8;
  s.max_seq_len = 4096;  // beyond the trained context is the caller's choice
  Result<EnginePlan> p = plan_engine(s, small_model(), 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.kv.num_blocks, 100);
  EXPECT_EQ(p->config.kv.block_size, 32);
  EXPECT_EQ(p->config.kv_types, KvCacheTypes(KvDType::kInt8));
  EXPECT_EQ(p->config.max_seq_len, 4096);
  EXPECT_EQ(p->config.scheduler.max_num_seqs, 100);  // fewer blocks than step tokens
  EngineSettings budget;
  budget.kv_memory_gib = 1.0;
  p = plan_engine(budget, small_model(), 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->kv_pool.num_blocks, int32_t(kGiB / (16 * 4096)));  // f16 K and V
}

TEST(EnginePlanTest, RanksOnOneMachineShareTheFreeRam) {
  EngineSettings s;
  Result<EnginePlan> one = plan_engine(s, small_model(), 2 * kGiB);
  s.ranks_sharing_ram = 2;
  Result<EnginePlan> two = plan_engine(s, small_model(), 2 * kGiB);
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(two->kv_pool.num_blocks, one->kv_pool.num_blocks / 2);
}

TEST(EnginePlanTest, ATinyModelGetsOneThreadUnlessTold) {
  ModelConfig tiny = small_model();
  tiny.dim = 64;
  tiny.hidden_dim = 172;
  tiny.num_heads = 8;
  tiny.num_kv_heads = 4;
  tiny.head_dim = 8;
  tiny.vocab_size = 512;
  EXPECT_EQ(resolve_num_threads(0, tiny), 1);
  EXPECT_EQ(resolve_num_threads(2, tiny), 2);
  EXPECT_EQ(resolve_num_threads(0, small_model()), 0);
}

TEST(EnginePlanTest, BadSettingsAreErrorsNamingThem) {
  const auto error = [](EngineSettings s) {
    Result<EnginePlan> p = plan_engine(s, small_model(), 8 * kGiB);
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : p.error();
  };
  EngineSettings s;
  s.block_size = 24;
  EXPECT_THAT(error(s), HasSubstr("block_size must be a power of two in [1, 1024], got 24"));
  s = {};
  s.kv_blocks = 10;
  s.kv_memory_gib = 1.0;
  EXPECT_THAT(error(s), HasSubstr("not both"));
  s = {};
  s.max_num_seqs = 0;
  EXPECT_THAT(error(s), HasSubstr("max_num_seqs"));
  s = {};
  s.max_queue = 0;
  EXPECT_THAT(error(s), HasSubstr("max_queue"));
  s = {};
  s.max_prefill_tokens_with_decodes = -5;
  EXPECT_THAT(error(s), HasSubstr("max_prefill_tokens_with_decodes"));
}

TEST(EnginePlanTest, OneSequenceRunsAreRefusedBeyondHalfTheRam) {
  const ModelConfig m = small_model();
  Result<EngineConfig> c = plan_single_sequence_engine(1000, 16, KvDType::kF32, 256, 1, m.kv_shape(), 8 * kGiB);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->kv.num_blocks, 63);  // ceil(1000 / 16)
  EXPECT_EQ(c->scheduler.max_num_seqs, 1);
  EXPECT_FALSE(c->kv.enable_prefix_cache);
  // 1M tokens x 8 KiB = 8 GiB of KV on a 8 GiB machine.
  c = plan_single_sequence_engine(1 << 20, 16, KvDType::kF32, 256, 1, m.kv_shape(), 8 * kGiB);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error(), HasSubstr("more than half of this machine's 8.0 GiB"));
  EXPECT_FALSE(plan_single_sequence_engine(64, 3, KvDType::kF32, 256, 1, m.kv_shape(), 8 * kGiB).ok());
}

// A hybrid model (LFM2's shape: conv layers with a state per sequence): its prefix cache comes with state snapshots,
// 32 by default, fewer where they would take over a quarter of the KV pool; --state-snapshots 0 turns it off; the
// setting on a model without recurrent layers is flagged as unused.
TEST(EnginePlanTest, AHybridModelsPrefixCacheTakesStateSnapshots) {
  ModelConfig m = small_model();
  m.layer_is_conv = {1, 0, 1, 0};
  m.shortconv_l_cache = 3;
  ASSERT_TRUE(m.has_recurrent_state());
  const int64_t state_bytes = m.state_floats_per_seq() * int64_t(sizeof(float));
  Result<EnginePlan> p = plan_engine({}, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->state_bytes_per_seq, state_bytes);
  EXPECT_TRUE(p->config.kv.enable_prefix_cache);
  EXPECT_EQ(p->config.kv.num_state_snapshots, kDefaultStateSnapshots);
  EXPECT_FALSE(p->state_snapshots_unused);
  // A pool of 4 blocks: a quarter of it holds fewer states than the default, and at least one is kept.
  EngineSettings small;
  small.kv_blocks = 4;
  p = plan_engine(small, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  const int64_t fit = p->kv_pool.total_bytes / 4 / state_bytes;
  ASSERT_LT(fit, kDefaultStateSnapshots);
  EXPECT_EQ(p->config.kv.num_state_snapshots, std::max<int64_t>(1, fit));
  EngineSettings off;
  off.state_snapshots = 0;
  p = plan_engine(off, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_FALSE(p->config.kv.enable_prefix_cache);
  EngineSettings five;
  five.state_snapshots = 5;
  p = plan_engine(five, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->config.kv.num_state_snapshots, 5);
  five.prefix_cache = false;
  p = plan_engine(five, m, 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_FALSE(p->config.kv.enable_prefix_cache);
  EngineSettings bad;
  bad.state_snapshots = -1;
  p = plan_engine(bad, m, 8 * kGiB);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.error(), HasSubstr("state_snapshots must be >= 0"));
  p = plan_engine(five, small_model(), 8 * kGiB);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->state_snapshots_unused);
  EXPECT_EQ(p->config.kv.num_state_snapshots, 0);
}

}  // namespace
}  // namespace pagoda
