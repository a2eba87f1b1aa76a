// ServingMetrics: one finished request's timing becomes the vLLM histograms' samples.
#include "server/serving_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

using ::testing::HasSubstr;

// The value of the sample whose series (name and labels) is exactly `series`.
double sample(const std::string& text, const std::string& series) {
  const size_t pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) return -1.0;
  return std::stod(text.substr(pos + series.size() + 2));
}

TEST(ServingMetricsTest, AFinishedRequestFillsEveryHistogram) {
  ServingMetrics m("tiny");
  RequestTiming t;
  t.arrival_us = 0;
  t.first_scheduled_us = 100'000;            // 0.1 s in the queue
  t.first_token_us = 300'000;                // TTFT 0.3 s
  t.token_us = {300'000, 350'000, 400'000};  // two gaps of 50 ms
  t.finish_us = 400'000;
  m.record_finished(t, FinishReason::kLength, 5, 3);
  EngineStats s;
  s.num_finished_length = 1;
  s.kv.num_prefix_hit_tokens = 16;
  CacheConfigInfo cache{16, "int8", true, 64, "int8", "int8", 2176};
  const std::string text = m.render(s, cache);
  EXPECT_NEAR(sample(text, "pagoda:time_to_first_token_seconds_sum{model_name=\"tiny\"}"), 0.3, 1e-9);
  EXPECT_THAT(text, HasSubstr("pagoda:inter_token_latency_seconds_count{model_name=\"tiny\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("pagoda:inter_token_latency_seconds_bucket{model_name=\"tiny\",le=\"0.05\"} 2\n"));
  EXPECT_NEAR(sample(text, "pagoda:request_time_per_output_token_seconds_sum{model_name=\"tiny\"}"), 0.05, 1e-9);
  EXPECT_NEAR(sample(text, "pagoda:request_queue_time_seconds_sum{model_name=\"tiny\"}"), 0.1, 1e-9);
  EXPECT_NEAR(sample(text, "pagoda:request_prefill_time_seconds_sum{model_name=\"tiny\"}"), 0.2, 1e-9);
  EXPECT_NEAR(sample(text, "pagoda:request_decode_time_seconds_sum{model_name=\"tiny\"}"), 0.1, 1e-9);
  EXPECT_NEAR(sample(text, "pagoda:e2e_request_latency_seconds_sum{model_name=\"tiny\"}"), 0.4, 1e-9);
  EXPECT_THAT(text, HasSubstr("pagoda:prefix_cache_hits_total{model_name=\"tiny\"} 16\n"));
  EXPECT_THAT(text, HasSubstr("pagoda:request_success_total{model_name=\"tiny\",finished_reason=\"length\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("pagoda:cache_config_info{model_name=\"tiny\",block_size=\"16\",cache_dtype=\"int8\","
                              "cache_type_k=\"int8\",cache_type_v=\"int8\",enable_prefix_caching=\"True\","
                              "num_gpu_blocks=\"64\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("pagoda:kv_cache_bytes_per_token{model_name=\"tiny\",cache_type_k=\"int8\","
                              "cache_type_v=\"int8\"} 2176\n"));
}

TEST(ServingMetricsTest, SpeculativeDecodingCountersAppearUnderVllmsNamesOnlyWhenItIsOn) {
  ServingMetrics m("tiny");
  CacheConfigInfo cache{16, "f32", true, 64, "f32", "f32", 0};
  EngineStats off;
  EXPECT_THAT(m.render(off, cache), ::testing::Not(HasSubstr("spec_decode")));
  EngineStats s;
  s.spec_num_drafts = 10;
  s.spec_num_draft_tokens = 30;
  s.spec_num_accepted_tokens = 12;
  s.spec_num_accepted_tokens_per_pos = {7, 4, 1};
  const std::string text = m.render(s, cache);
  EXPECT_EQ(sample(text, "pagoda:spec_decode_num_drafts_total{model_name=\"tiny\"}"), 10.0);
  EXPECT_EQ(sample(text, "pagoda:spec_decode_num_draft_tokens_total{model_name=\"tiny\"}"), 30.0);
  EXPECT_EQ(sample(text, "pagoda:spec_decode_num_accepted_tokens_total{model_name=\"tiny\"}"), 12.0);
  EXPECT_EQ(sample(text, "pagoda:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"0\"}"), 7.0);
  EXPECT_EQ(sample(text, "pagoda:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"2\"}"), 1.0);
}

}  // namespace
}  // namespace pagoda::server
