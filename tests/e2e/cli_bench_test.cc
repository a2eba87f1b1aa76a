// `pagoda bench offline|batched|prefix|interference` on the bundled model: each runs to the end and its JSON
// figures are consistent with the workload it was given (counts exact, rates positive, cache hits where the
// prompts share blocks). Speed itself is never asserted: these are benchmarks, measured, not tested.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

nlohmann::json run_json(const std::vector<std::string>& args) {
  const ProcessResult r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(CliBenchTest, OfflineCountsEveryRequestAndToken) {
  const auto j =
      run_json({"bench", "offline", "--num-prompts", "6", "--input-len", "8-40", "--output-len", "5", "--json"});
  EXPECT_EQ(j["num_requests"], 6);
  EXPECT_EQ(j["num_output_tokens"], 30);
  EXPECT_GT(j["output_tok_s"].get<double>(), 0.0);
  EXPECT_GE(j["peak_running"].get<int>(), 1);
}

TEST(CliBenchTest, BatchedGivesARowPerBatchSizeWithEveryDecodeTokenCounted) {
  const auto j = run_json({"bench", "batched", "--npp", "16", "--ntg", "6", "--npl", "1,3", "--json"});
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["b"], 1);
  EXPECT_EQ(j["rows"][0]["n_tg"], 5);  // the first token ends prefill; the other five are decode
  EXPECT_EQ(j["rows"][1]["b"], 3);
  EXPECT_EQ(j["rows"][1]["n_pp"], 48);
  EXPECT_LE(j["rows"][1]["n_tg"].get<int>(), 15);
  for (const auto& row : j["rows"]) EXPECT_GT(row["s_tg"].get<double>(), 0.0);
}

TEST(CliBenchTest, PrefixServesTheSharedBlocksFromTheCache) {
  const auto j = run_json(
      {"bench", "prefix", "--prefix-len", "64", "--suffix-len", "8", "--rounds", "2", "--block-size", "16", "--json"});
  EXPECT_EQ(j["rounds"], 2);
  EXPECT_EQ(j["second_cached_tokens"].get<double>(), 64.0);  // four whole blocks of 16
  EXPECT_GT(j["first_ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(j["second_ttft_ms"].get<double>(), 0.0);
}

TEST(CliBenchTest, PrefixWithTheCacheOffServesNothingFromIt) {
  const auto j = run_json(
      {"bench", "prefix", "--prefix-len", "64", "--suffix-len", "8", "--rounds", "1", "--no-prefix-cache", "--json"});
  EXPECT_EQ(j["second_cached_tokens"].get<double>(), 0.0);
}

TEST(CliBenchTest, InterferenceMeasuresTheStreamsWithAndWithoutChunking) {
  const auto j = run_json({"bench", "interference", "--streams", "2", "--long-prompt", "100", "--warmup", "4", "--tail",
                           "4", "--max-batched-tokens", "16", "--json"});
  for (const char* mode : {"chunked", "unchunked"}) {
    SCOPED_TRACE(mode);
    EXPECT_GE(j[mode]["itl_ms"]["count"].get<int>(), 2 * 7);  // at least warm-up + tail intervals per stream
    EXPECT_GE(j[mode]["during_prefill_itl_ms"]["count"].get<int>(), 1);
    EXPECT_GT(j[mode]["long_ttft_ms"].get<double>(), 0.0);
  }
}

TEST(CliBenchTest, BadScenarioArgumentsAreCleanErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"bench", "batched", "--npl", "0"},
                                               {"bench", "batched", "--ntg", "1"},
                                               {"bench", "prefix", "--rounds", "0"},
                                               {"bench", "prefix", "--prefix-len", "100000"},
                                               {"bench", "interference", "--long-prompt", "100000"},
                                               {"bench", "batched", "--batch-size", "2", "--npl", "4"}}) {
    const ProcessResult r = run_pagoda(args);
    EXPECT_EQ(r.exit_code, 1) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_NE(r.err.find("pagoda: error:"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace pagoda::e2e
