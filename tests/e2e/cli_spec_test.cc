// Speculative decoding through the real binary: `pagoda run --spec ngram` (fixed and adaptive draft length, with
// an n-gram corpus) and `--spec draft --draft-model bundled` print the greedy golden story and their acceptance;
// servers started with --spec ngram (with an n-gram history too) and --spec draft give the same completion as one
// without and count their drafts under vLLM's metric names; `bench latency --spec` times a request both ways on
// the threads `pagoda run` would use; bad --spec values and draft flags are clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

std::string greedy_story(const std::vector<std::string>& extra_flags, std::string* err = nullptr) {
  std::vector<std::string> args = {"run", "-p", "Once upon a time", "-n", "196", "--temp", "0"};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  ProcessResult r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (err != nullptr) *err = r.err;
  return r.out;
}

TEST(CliSpecTest, RunWithNgramDraftsPrintsThePlainGreedyStory) {
  const std::string plain = greedy_story({});
  ASSERT_GT(plain.size(), 200u);
  std::string err;
  EXPECT_EQ(greedy_story({"--spec", "ngram", "--spec-fixed", "--spec-tokens", "4"}, &err), plain);
  EXPECT_THAT(err, HasSubstr("speculative: "));         // drafts were verified and the acceptance reported
  EXPECT_EQ(greedy_story({"--spec", "ngram"}), plain);  // adaptive length
  EXPECT_EQ(greedy_story({"--spec", "draft", "--draft-model", "bundled", "--spec-fixed"}, &err), plain);
  EXPECT_THAT(err, HasSubstr("draft model bundled:stories260K"));
  EXPECT_THAT(err, HasSubstr("(100.0 %)"));  // the model drafting for itself: every draft accepted

  // A corpus of stories (the greedy story itself among them): its n-grams draft too, the story unchanged.
  TempDir dir;
  const std::string corpus = dir.path() + "/corpus.txt";
  {
    std::ofstream f(corpus);
    f << "Tom had a red ball. He liked to play with it in the park.\n" << plain << "\nThe end.\n";
  }
  EXPECT_EQ(greedy_story({"--spec", "ngram", "--spec-ngram-corpus", corpus}, &err), plain);
  EXPECT_THAT(err, HasSubstr("n-gram corpus " + corpus + ": "));
  EXPECT_THAT(err, HasSubstr("speculative: "));
}

TEST(CliSpecTest, BenchLatencyTimesBothWaysOnTheThreadsRunWouldUse) {
  const std::vector<std::string> bench = {
      "bench", "latency", "--spec",   "ngram", "--prompt", "Lily and Ben went to the park. They",
      "--gen", "48",      "--rounds", "2"};
  const ProcessResult r = run_pagoda(bench);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The bundled model's default pool is `pagoda run`'s: one thread for a model this small.
  EXPECT_THAT(run_pagoda({"run", "-p", "x", "-n", "2"}).err, HasSubstr(", 1 threads)"));
  EXPECT_THAT(r.out, HasSubstr("bundled:stories260K, 1 threads,"));
  EXPECT_THAT(r.out, HasSubstr("greedy tokens identical: yes"));
  EXPECT_THAT(r.out, HasSubstr("decode speed-up with speculation: median"));
  std::vector<std::string> two = bench;
  two.insert(two.end(), {"--threads", "2"});
  const ProcessResult t = run_pagoda(two);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("bundled:stories260K, 2 threads,"));
  EXPECT_THAT(t.out, HasSubstr("greedy tokens identical: yes"));
}

TEST(CliSpecTest, BadSpecFlagsAreClearErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", "-p", "x", "--spec", "eagle"}, "--spec must be none, ngram or draft"},
      {{"run", "-p", "x", "--spec", "ngram", "--spec-tokens", "100"}, "--spec-tokens must be in [1, 64]"},
      {{"run", "-p", "x", "--spec", "ngram", "--spec-ngram-min", "3", "--spec-ngram-max", "2"}, "--spec-ngram-min"},
      {{"run", "-p", "x", "--spec", "draft"}, "--spec draft needs --draft-model"},
      {{"run", "-p", "x", "--draft-model", "bundled"}, "go with --spec draft"},
      {{"run", "-p", "x", "--spec", "draft", "--draft-model", "bundled", "--spec-ngram-max", "3"},
       "go with --spec ngram"},
      {{"run", "-p", "x", "--spec", "draft", "--draft-model", "/nonexistent/draft.gguf"}, "/nonexistent/draft.gguf"},
      {{"run", "-p", "x", "--spec-ngram-history", "1000"}, "go with --spec ngram"},
      {{"run", "-p", "x", "--spec", "ngram", "--spec-ngram-history", "-1"}, "--spec-ngram-history must be in"},
      {{"run", "-p", "x", "--spec", "ngram", "--spec-ngram-corpus", "/nonexistent/corpus.txt"},
       "cannot read --spec-ngram-corpus /nonexistent/corpus.txt"},
      {{"serve", "--spec", "draft", "--draft-model", "bundled", "--draft-kv-blocks", "2", "--port", "0"},
       "the draft KV pool needs at least"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = run_pagoda(c.args);
    EXPECT_NE(r.exit_code, 0) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
}

TEST(CliSpecTest, AServerWithNgramDraftsAnswersAsWithoutAndCountsItsDrafts) {
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 196, "temperature": 0})";
  ServerProcess plain({});
  ASSERT_TRUE(plain.started()) << plain.log();
  const HttpReply a = http_request(plain.port(), "POST", "/v1/completions", body);
  ASSERT_EQ(a.status, 200) << a.body;
  ServerProcess spec({"--spec", "ngram", "--spec-fixed"});
  ASSERT_TRUE(spec.started()) << spec.log();
  EXPECT_THAT(spec.log(), HasSubstr("speculative decoding ngram, up to 4 tokens (fixed)"));
  const HttpReply b = http_request(spec.port(), "POST", "/v1/completions", body);
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(json::parse(b.body)["choices"][0]["text"], json::parse(a.body)["choices"][0]["text"]);
  const std::string name = json::parse(http_request(spec.port(), "GET", "/v1/models").body)["data"][0]["id"];
  const std::string m = metrics(spec);
  const std::optional<double> drafts =
      metric_value(m, "pagoda:spec_decode_num_draft_tokens_total{model_name=\"" + name + "\"}");
  const std::optional<double> accepted =
      metric_value(m, "pagoda:spec_decode_num_accepted_tokens_total{model_name=\"" + name + "\"}");
  ASSERT_TRUE(drafts && accepted) << m;
  EXPECT_GT(*drafts, 0.0);
  EXPECT_GT(*accepted, 0.0);
  EXPECT_LE(*accepted, *drafts);
  EXPECT_TRUE(metric_value(
      m, "pagoda:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"" + name + "\",position=\"0\"}"));
  EXPECT_FALSE(metric_value(metrics(plain), "pagoda:spec_decode_num_draft_tokens_total"));

  // With a history, a request's drafts also come from earlier outputs: the same request again accepts more. Fixed
  // length: what is drafted then depends on the drafter alone, not on the adaptive length's timing of the steps
  // (which, on a loaded machine, verified fewer drafts in the second run than in the first).
  ServerProcess learning({"--spec", "ngram", "--spec-fixed", "--spec-ngram-history", "100000"});
  ASSERT_TRUE(learning.started()) << learning.log();
  EXPECT_THAT(learning.log(), HasSubstr("history of 100000 n-grams"));
  const std::string accepted_name = "pagoda:spec_decode_num_accepted_tokens_total{model_name=\"" + name + "\"}";
  double accepted_after[2] = {};
  for (int run = 0; run < 2; ++run) {
    const HttpReply r = http_request(learning.port(), "POST", "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], json::parse(a.body)["choices"][0]["text"]);
    accepted_after[run] = metric_value(metrics(learning), accepted_name).value_or(-1.0);
  }
  EXPECT_GT(accepted_after[1] - accepted_after[0], accepted_after[0]);

  // The draft's KV in llama.cpp's -ctkd/-ctvd spelling (f16 by default).
  ServerProcess draft({"--spec", "draft", "--draft-model", "bundled", "-ctkd", "f32", "-ctvd", "bf16"});
  ASSERT_TRUE(draft.started()) << draft.log();
  EXPECT_THAT(draft.log(),
              HasSubstr("speculative decoding draft model, up to 4 tokens (adaptive), draft KV K f32, V bf16"));
  const HttpReply c = http_request(draft.port(), "POST", "/v1/completions", body);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body)["choices"][0]["text"], json::parse(a.body)["choices"][0]["text"]);
}

}  // namespace
}  // namespace pagoda::e2e
