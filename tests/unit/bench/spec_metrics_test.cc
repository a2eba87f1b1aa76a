// parse_spec_decode_counters: pagoda's and vLLM's spec_decode counters out of /metrics text, summed over label
// sets, other families ignored; nothing when speculation is off. describe_spec_decode: the run's difference.
#include "bench/spec_metrics.h"

#include <gtest/gtest.h>

namespace pagoda::bench {
namespace {

TEST(SpecMetrics, ReadsPagodasAndVllmsCounters) {
  const std::string pagoda_text =
      "# HELP pagoda:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
      "# TYPE pagoda:spec_decode_num_drafts_total counter\n"
      "pagoda:spec_decode_num_drafts_total{model_name=\"m\"} 10\n"
      "pagoda:spec_decode_num_draft_tokens_total{model_name=\"m\"} 40\n"
      "pagoda:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 25\n"
      "pagoda:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"0\"} 9\n"
      "pagoda:generation_tokens_total{model_name=\"m\"} 500\n";
  const auto c = parse_spec_decode_counters(pagoda_text);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->num_drafts, 10);
  EXPECT_EQ(c->num_draft_tokens, 40);
  EXPECT_EQ(c->num_accepted_tokens, 25);
  const auto v = parse_spec_decode_counters(
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 3.0\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m\"} 4.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 12.0\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->num_drafts, 7);
  EXPECT_EQ(v->num_draft_tokens, 12);
  EXPECT_EQ(v->num_accepted_tokens, 0);
  EXPECT_FALSE(parse_spec_decode_counters("pagoda:generation_tokens_total{model_name=\"m\"} 5\n# spec_decode\n"));
}

TEST(SpecMetrics, DescribesTheRunsDifference) {
  const SpecDecodeCounters before{10, 40, 25}, after{30, 120, 65};
  EXPECT_EQ(describe_spec_decode(before, after),
            "speculative decoding: 40 of 80 drafts accepted (50.0 %), 3.00 tokens per verifying step");
  EXPECT_EQ(describe_spec_decode(before, before), "speculative decoding: no drafts verified during the run");
}

}  // namespace
}  // namespace pagoda::bench
