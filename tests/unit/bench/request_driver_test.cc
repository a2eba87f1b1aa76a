// The benchmarks' naive-server baselines, simulated around the engine on the bundled model: client-side static
// batches (the same text as continuous batching; a fixed-shape batch computes padding rows for its ended members
// until its longest ends, static-shrink none; requests that arrive while a batch runs wait for the next one) and
// the contiguous KV layout as a cap on running sequences, with its reservation's arithmetic by hand.
#include "bench/request_driver.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "bench/serving_baseline.h"
#include "loader/loaded_model.h"
#include "support/bundled_engine_fixture.h"

namespace pagoda::bench {
namespace {

class RequestDriverTest : public BundledEngineTest {
 protected:
  static EngineConfig config(int32_t max_num_seqs) {
    EngineConfig c = BundledEngineTest::config(256);
    c.scheduler.max_num_seqs = max_num_seqs;
    return c;
  }
  // 16 prompts of mixed lengths, greedy, exact output lengths 8..86, all arriving at once.
  static std::vector<DrivenRequest> mixed_requests() {
    const char* starts[] = {"Once upon a time",
                            "The cat",
                            "Lily and Ben went to the park. They",
                            "The sun",
                            "One day, a little boy named Tim found a big red ball in the garden. He",
                            "Mom said"};
    std::vector<DrivenRequest> out;
    for (int i = 0; i < 16; ++i) {
      DrivenRequest d;
      d.request.prompt = loaded_->tokenizer->encode(starts[i % 6], true);
      d.request.sampling.temperature = 0.0f;
      d.request.sampling.ignore_eos = true;
      d.request.sampling.max_tokens = 8 + 13 * (i % 7);
      out.push_back(std::move(d));
    }
    return out;
  }
};

TEST_F(RequestDriverTest, EveryClientGetsItsOwnTokensAndOnlyFixedShapeBatchesComputePadding) {
  std::vector<DriveReport> reports;
  std::vector<EngineStats> stats;
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic, BatchingMode::kStaticShrinking}) {
    auto engine = make(config(8));
    ASSERT_TRUE(engine);
    Result<DriveReport> r = drive_requests(*engine, mixed_requests(), mode);
    ASSERT_TRUE(r.ok()) << r.error();
    reports.push_back(std::move(r).value());
    stats.push_back(engine->stats());
    EXPECT_EQ(stats.back().kv.num_used_blocks, 0) << batching_mode_name(mode);
    EXPECT_EQ(stats.back().num_running, 0) << batching_mode_name(mode);
  }
  const std::vector<DrivenRequest> requests = mixed_requests();
  int64_t num_output_tokens = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    for (const DriveReport& r : reports) {
      // Each client got exactly its own tokens, timed: padding rows are never part of an answer.
      EXPECT_EQ(r.results[i].num_output_tokens, requests[i].request.sampling.max_tokens) << i;
      EXPECT_EQ(int32_t(r.results[i].timing.token_us.size()), r.results[i].num_output_tokens) << i;
      EXPECT_GE(r.results[i].timing.finish_us, r.results[i].timing.token_us.back()) << i;
    }
    num_output_tokens += requests[i].request.sampling.max_tokens;
  }
  // Only the fixed-shape batches computed padding: the mixed lengths leave most rows of a batch idle at its end,
  // and the engine sampled every one of those rows.
  EXPECT_EQ(reports[0].num_padding_tokens, 0);
  EXPECT_GT(reports[1].num_padding_tokens, num_output_tokens / 4);
  EXPECT_EQ(reports[2].num_padding_tokens, 0);
  EXPECT_EQ(stats[0].num_generation_tokens, num_output_tokens);
  EXPECT_EQ(stats[1].num_generation_tokens, num_output_tokens + reports[1].num_padding_tokens);
  EXPECT_EQ(stats[2].num_generation_tokens, num_output_tokens);
}

TEST_F(RequestDriverTest, StaticBatchesGiveTheSameTokensAsContinuousBatching) {
  // The same greedy requests through plain streams: what the static batches' members computed as their own
  // answers is token for token what continuous batching gives.
  auto continuous = make(config(8));
  auto padded = make(config(8));
  ASSERT_TRUE(continuous && padded);
  std::vector<DrivenRequest> requests = mixed_requests();
  std::vector<RequestHandle> a;
  for (const DrivenRequest& d : requests) a.push_back(*continuous->submit(d.request));
  // Batch of 3 members with lengths 8, 21, 34: the two shorter ones pad to 34.
  std::vector<RequestHandle> b;
  for (size_t i = 0; i < 3; ++i) {
    GenerateRequest r = requests[i].request;
    r.sampling.max_tokens = requests[2].request.sampling.max_tokens;
    b.push_back(*padded->submit(r));
  }
  for (size_t i = 0; i < 3; ++i) {
    const RequestOutput x = a[i].stream->wait_all(), y = b[i].stream->wait_all();
    const size_t own = size_t(requests[i].request.sampling.max_tokens);
    ASSERT_GE(y.new_tokens.size(), own);
    EXPECT_EQ(x.new_tokens, std::vector<TokenId>(y.new_tokens.begin(), y.new_tokens.begin() + int64_t(own))) << i;
  }
  for (size_t i = 3; i < a.size(); ++i) a[i].stream->wait_all();
}

TEST_F(RequestDriverTest, AStaticBatchTakesWhatHasArrivedAndLaterArrivalsWaitForTheNext) {
  auto engine = make(config(2));  // batches of at most 2
  ASSERT_TRUE(engine);
  std::vector<DrivenRequest> requests = mixed_requests();
  requests.resize(3);  // lengths 8, 21, 34, all at once: a batch of the first two, then the third
  Result<DriveReport> r = drive_requests(*engine, requests, BatchingMode::kStatic);
  ASSERT_TRUE(r.ok()) << r.error();
  const std::vector<DrivenResult>& res = r->results;
  // The first batch's short member padded until the long one ended (and up to the step its cancel landed in);
  // the third started only after that.
  EXPECT_GE(r->num_padding_tokens, 21 - 8);
  EXPECT_EQ(engine->stats().num_generation_tokens, 8 + 21 + 34 + r->num_padding_tokens);
  EXPECT_GE(res[2].timing.first_scheduled_us, res[1].timing.finish_us);
  EXPECT_GE(res[2].timing.first_scheduled_us, res[0].timing.finish_us);
  // It arrived with the others, so its wait in the client's queue counts in its TTFT and queue time.
  EXPECT_EQ(res[2].timing.arrival_us, res[0].timing.arrival_us);
  EXPECT_GT(res[2].timing.ttft_s(), res[1].timing.e2e_s());
}

TEST_F(RequestDriverTest, StaticBatchingNeedsExactLengths) {
  auto engine = make(config(8));
  ASSERT_TRUE(engine);
  std::vector<DrivenRequest> requests = mixed_requests();
  requests[3].request.sampling.ignore_eos = false;
  Result<DriveReport> r = drive_requests(*engine, requests, BatchingMode::kStatic);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("ignore_eos"), std::string::npos) << r.error();
}

TEST_F(RequestDriverTest, TheContiguousLayoutCapsRunningSequencesAtItsReservationAndGivesTheSameText) {
  EngineConfig c = config(32);
  c.kv.num_blocks = 40;  // max_seq_len 256 = 16 blocks: 2 sequences reserve 32 of them
  ASSERT_TRUE(apply_kv_layout(KvLayout::kContiguous, c).ok());
  EXPECT_EQ(c.scheduler.max_num_seqs, 2);
  EXPECT_FALSE(c.kv.enable_prefix_cache);
  auto contiguous = make(c);
  auto paged = make(config(32));
  ASSERT_TRUE(contiguous && paged);
  Result<DriveReport> x = drive_requests(*contiguous, mixed_requests(), BatchingMode::kContinuous);
  Result<DriveReport> y = drive_requests(*paged, mixed_requests(), BatchingMode::kContinuous);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(contiguous->stats().peak_num_running, 2);
  EXPECT_GT(paged->stats().peak_num_running, 2);
  EXPECT_EQ(contiguous->stats().num_preemptions, 0);  // none can outgrow its reservation
  EXPECT_EQ(contiguous->stats().kv.num_used_blocks, 0);

  EngineConfig tiny = config(8);
  tiny.kv.num_blocks = 15;
  const Status refused = apply_kv_layout(KvLayout::kContiguous, tiny);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("cannot reserve one sequence"), std::string::npos) << refused.message();
  EngineConfig untouched = config(8);
  ASSERT_TRUE(apply_kv_layout(KvLayout::kPaged, untouched).ok());
  EXPECT_EQ(untouched.scheduler.max_num_seqs, 8);
  EXPECT_TRUE(untouched.kv.enable_prefix_cache);
}

TEST(ContiguousReservation, BlocksAndWastedSlotsByHand) {
  EngineConfig c;
  c.max_seq_len = 100;  // 7 blocks of 16
  c.kv.block_size = 16;
  c.kv.num_blocks = 30;
  const ContiguousReservation r = ContiguousReservation::of(c);
  EXPECT_EQ(r.blocks_per_seq, 7);
  EXPECT_EQ(r.max_num_seqs, 4);
  EXPECT_EQ(r.num_reserved_blocks(3), 21);
  KvCacheStats paged;  // 3 sequences holding 40 tokens in 5 blocks: 80 slots, 40 of them empty
  paged.num_allocated_slots = 80;
  paged.num_wasted_slots = 40;
  EXPECT_EQ(r.num_wasted_slots(3, paged, 16), 21 * 16 - 40);
}

TEST(ServingBaseline, NamesParseBackAndUnknownOnesNameTheFlag) {
  for (BatchingMode m : {BatchingMode::kContinuous, BatchingMode::kStatic, BatchingMode::kStaticShrinking})
    EXPECT_EQ(*parse_batching_mode(batching_mode_name(m)), m);
  for (KvLayout l : {KvLayout::kPaged, KvLayout::kContiguous}) EXPECT_EQ(*parse_kv_layout(kv_layout_name(l)), l);
  EXPECT_NE(parse_batching_mode("dynamic").error().find("--batching"), std::string::npos);
  EXPECT_NE(parse_kv_layout("ring").error().find("--kv-layout"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::bench
