// pagoda tune's decisions: which trial wins under the SLOs (online: lowest TPOT p99; offline: most tokens/s;
// the best by the objective alone when none meets them), the bandwidth-bound decode time, the hints its figures
// trigger, and that the config it writes loads back with the same values. (The KV-size formula is tested
// against TinyLlama and Llama-2-7B in arrival_schedule_test.cc.)
#include "bench/tune_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda::bench {
namespace {

using ::testing::HasSubstr;

TuneTrial trial(double ttft_p99, double tpot_p99, double tok_s, int32_t batch = 8) {
  TuneTrial t;
  t.candidate.batch_size = batch;
  t.figures.ttft_mean_ms = ttft_p99;
  t.figures.ttft_p99_ms = ttft_p99;
  t.figures.tpot_mean_ms = tpot_p99;
  t.figures.tpot_p99_ms = tpot_p99;
  t.figures.output_tok_s = tok_s;
  t.figures.max_concurrent_seqs = 100;
  return t;
}

TEST(TunePlan, ChoosesByTheScenarioObjectiveAmongTrialsMeetingTheSlos) {
  const std::vector<TuneTrial> trials{trial(900, 40, 30), trial(300, 60, 50), trial(200, 20, 10)};
  EXPECT_EQ(choose_trial(trials, AblationScenario::kOnline, {}).index, 2u);   // lowest TPOT p99
  EXPECT_EQ(choose_trial(trials, AblationScenario::kOffline, {}).index, 1u);  // most tokens/s
  TuneSlo slo;
  slo.tpot_p99_ms = 50;
  EXPECT_EQ(choose_trial(trials, AblationScenario::kOffline, slo).index, 0u);  // 1 misses the TPOT SLO
  slo.ttft_p99_ms = 250;
  const TuneChoice only = choose_trial(trials, AblationScenario::kOffline, slo);
  EXPECT_EQ(only.index, 2u);
  EXPECT_TRUE(only.met_slo);
  slo.ttft_p99_ms = 100;  // nobody: the objective alone, flagged
  const TuneChoice none = choose_trial(trials, AblationScenario::kOffline, slo);
  EXPECT_EQ(none.index, 1u);
  EXPECT_FALSE(none.met_slo);
}

TEST(TunePlan, DecodeTimeIsWeightBytesOverBandwidth) {
  EXPECT_DOUBLE_EQ(decode_ms_per_token(int64_t(1'000'000'000), 10.0), 100.0);  // 1 GB at 10 GB/s
  EXPECT_DOUBLE_EQ(decode_ms_per_token(int64_t(3'800'000'000), 20.0), 190.0);  // 7B Q4_0 at 20 GB/s
  EXPECT_EQ(decode_ms_per_token(1000, 0.0), 0.0);
}

TEST(TunePlan, HintsFollowTheFigures) {
  TuneEstimates e;
  e.membw_gbps = 10.0;
  e.weight_bytes[size_t(AblationWeights::kQ4_0)] = 100'000'000;  // 10 ms per token
  std::vector<TuneTrial> calm{trial(100, 12, 50)};
  EXPECT_TRUE(tune_hints(calm, {0, true}, AblationScenario::kOnline, {}, e).empty());
  std::vector<TuneTrial> spiky{trial(100, 12, 50)};
  spiky[0].figures.ttft_p99_ms = 500;  // 5x the mean
  spiky[0].figures.tpot_p99_ms = 30;   // 2.5x the mean
  spiky[0].figures.tpot_mean_ms = 12;
  spiky[0].figures.max_concurrent_seqs = 4;  // for a batch of 8
  const std::vector<std::string> hints = tune_hints(spiky, {0, false}, AblationScenario::kOnline, {}, e);
  ASSERT_EQ(hints.size(), 4u);
  EXPECT_THAT(hints[0], HasSubstr("no configuration met the SLOs"));
  EXPECT_THAT(hints[1], HasSubstr("TTFT spikes"));
  EXPECT_THAT(hints[2], HasSubstr("TPOT jitter"));
  EXPECT_THAT(hints[3], HasSubstr("INT8 KV"));
  std::vector<TuneTrial> slow{trial(100, 40, 50)};  // 4x the 10 ms bandwidth bound
  EXPECT_THAT(tune_hints(slow, {0, true}, AblationScenario::kOnline, {}, e).at(0), HasSubstr("25% of the bandwidth"));
  std::vector<TuneTrial> batches{trial(100, 12, 50, 4), trial(100, 12, 80, 16)};
  EXPECT_THAT(tune_hints(batches, {1, true}, AblationScenario::kOffline, {}, e).back(), HasSubstr("larger batch"));
}

TEST(TunePlan, TheWrittenConfigLoadsBack) {
  TuneCandidate c;
  c.weights = AblationWeights::kQ4_0;
  c.kv_dtype = KvDType::kInt8;
  c.block_size = 32;
  c.batch_size = 16;
  const PagodaConfig written = tuned_config(c, "/models/tl-q4_0.gguf", 2048, 512, TuneSlo{3000.0, 150.0});
  ASSERT_TRUE(validate_config(written).ok());
  Result<PagodaConfig> back = parse_config(config_to_json(written), "tuned.json");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->model, "/models/tl-q4_0.gguf");
  EXPECT_EQ(back->quantization, "q4_0");
  EXPECT_EQ(back->max_seq_len, 2048);
  EXPECT_EQ(back->batch_size, 16);
  EXPECT_EQ(back->kv_cache.max_entries, 512);
  EXPECT_EQ(back->kv_cache.block_size, 32);
  EXPECT_EQ(back->kv_cache.dtype, "int8");
  EXPECT_EQ(back->parallel.tensor_parallel, 1);
  EXPECT_EQ(back->slo.ttft_ms, 3000.0);  // the SLOs the choice was made for pace the engine that loads it
  EXPECT_EQ(back->slo.tpot_ms, 150.0);
  c.weights = AblationWeights::kF32;
  c.kv_dtype = KvDType::kF32;
  const PagodaConfig f32 = tuned_config(c, "", 512, 64);
  EXPECT_EQ(f32.quantization, "none");  // the model file is f32: nothing to quantize at load
  EXPECT_EQ(f32.kv_cache.dtype, "f32");
  EXPECT_EQ(f32.slo.tpot_ms, 0.0);  // none given
}

}  // namespace
}  // namespace pagoda::bench
