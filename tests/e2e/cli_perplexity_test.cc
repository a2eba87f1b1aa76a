// `pagoda perplexity` through the real binary: llama-perplexity's figure and output format, JSON, KL mode
// against a base model, and clean errors (a bad llama-perplexity logits file among them) for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

const std::string kStory = PAGODA_TEST_STORY;

TEST(CliPerplexityTest, PrintsTheRunningEstimateAndTheFinalFigure) {
  ProcessResult r = run_pagoda({"perplexity", "-f", kStory, "--ctx", "128", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // llama-perplexity on the same GGUF and text: [1]...,[10]4.3831 and PPL = 4.3831 +/- 0.30719.
  EXPECT_THAT(r.out, ::testing::StartsWith("[1]"));
  EXPECT_THAT(r.out, HasSubstr(",[10]4.38"));
  EXPECT_THAT(r.out, HasSubstr("Final estimate: PPL = 4.38"));
  EXPECT_THAT(r.err, HasSubstr("10 chunks, 630 scored tokens"));
}

TEST(CliPerplexityTest, JsonWithKlAgainstTheF32KvBase) {
  ProcessResult r =
      run_pagoda({"perplexity", "-f", kStory, "--ctx", "64", "--kv-cache-dtype", "int8", "--kl-base", "bundled", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ctx"], 64);
  EXPECT_EQ(j["chunks"], 20);
  EXPECT_EQ(j["scored_tokens"], 620);
  const double ppl = j["ppl"], base_ppl = j["kl"]["base_ppl"];
  EXPECT_NEAR(base_ppl, 4.7813, 0.002);  // llama-perplexity's f32 figure
  EXPECT_LT(std::abs(ppl / base_ppl - 1.0), 0.005);
  EXPECT_GT(double(j["kl"]["mean_kl"]), 0.0);
  EXPECT_GT(double(j["kl"]["top1_agreement"]), 0.9);
}

TEST(CliPerplexityTest, KlTextReport) {
  ProcessResult r = run_pagoda({"perplexity", "-f", kStory, "--ctx", "64", "--chunks", "4", "--kl-base", "bundled"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Mean KL divergence:  0.000000 +/- 0.000000 nats"));
  EXPECT_THAT(r.out, HasSubstr("Same top-1 token:    100.000 +/- 0.000 %"));
  EXPECT_THAT(r.out, HasSubstr("PPL ratio:           1.00000"));
}

TEST(CliPerplexityTest, BadInputIsAClearError) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  write_file(dir + "/empty.txt", "");
  write_file(dir + "/short.txt", "Once upon a time.");
  write_file(dir + "/not-logits.bin", "_logitz_ not llama-perplexity's file");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"perplexity"}, "no text"},
      {{"perplexity", "-f", dir + "/missing.txt"}, "cannot read"},
      {{"perplexity", "-f", dir + "/empty.txt"}, "is empty"},
      {{"perplexity", "-f", dir + "/short.txt"}, "shorter than one chunk"},
      {{"perplexity", "-f", kStory, "--ctx", "4096"}, "exceeds"},
      {{"perplexity", "-f", kStory, "--kl-base", dir + "/missing.gguf"}, "--kl-base"},
      {{"perplexity", "-f", kStory, "--base-kv-cache-dtype", "int2"}, "int2"},
      {{"perplexity", "-f", kStory, "--chunks", "-1"}, "--chunks"},
      {{"perplexity", "-f", kStory, "--kl-base-logits", dir + "/missing.bin"}, "--kl-base-logits: cannot read"},
      {{"perplexity", "-f", kStory, "--kl-base-logits", dir + "/not-logits.bin"}, "not a logits file"},
      {{"perplexity", "-f", kStory, "--kl-base", "bundled", "--kl-base-logits", dir + "/not-logits.bin"}, "not both"},
  };
  for (const Case& c : cases) {
    ProcessResult r = run_pagoda(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args.back();
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args.back();
    EXPECT_TRUE(r.out.empty()) << c.args.back();
  }
}

}  // namespace
}  // namespace pagoda::e2e
