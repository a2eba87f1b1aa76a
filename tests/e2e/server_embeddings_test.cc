// Embeddings end to end: `pagoda embed` (the engine's pooling requests, called from the CLI) prints each text's
// vector, and `pagoda serve`'s /v1/embeddings gives the same ones to the official openai npm package
// (node_clients/embeddings_test.mjs: embeddings.create, one text and several, base64 and float, norm 1,
// dimensions refused); the pooling flags and their errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::vector<std::string> kTexts = {"Once upon a time", "The cat sat on the mat.", "Lily"};

std::vector<json> embed_lines(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"embed"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), kTexts.begin(), kTexts.end());
  const ProcessResult r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

TEST(ServerEmbeddingsTest, TheOpenAiSdkGetsTheVectorsPagodaEmbedPrints) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/openai"))
      << "the openai npm package is missing: `make test` installs it (npm ci in " << dir << ")";
  const std::vector<json> lines = embed_lines({});
  ASSERT_EQ(lines.size(), kTexts.size());
  std::string expected;
  for (const json& line : lines) expected += line.dump() + "\n";
  const TempDir tmp;
  write_file(tmp.path() + "/expected.jsonl", expected);
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("embeddings: last pooling (the default for decoder models)"));
  const std::string out =
      run_command("node " + dir + "/embeddings_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " " +
                  tmp.path() + "/expected.jsonl 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

TEST(ServerEmbeddingsTest, PoolingMethodsDifferAndTheServerFollowsItsFlag) {
  const std::vector<json> last = embed_lines({});
  const std::vector<json> mean = embed_lines({"--pooling", "mean"});
  const std::vector<json> cls = embed_lines({"--pooling", "cls"});
  const std::vector<json> raw = embed_lines({"--pooling", "mean", "--no-normalize"});
  ASSERT_EQ(mean.size(), kTexts.size());
  ASSERT_EQ(cls.size(), kTexts.size());
  ASSERT_EQ(raw.size(), kTexts.size());
  EXPECT_NE(last[0]["embedding"], mean[0]["embedding"]);
  // CLS pooling reads the first token, BOS for every text: the same vector whatever follows.
  EXPECT_EQ(cls[0]["embedding"], cls[1]["embedding"]);
  double raw_norm = 0.0;
  for (double x : raw[0]["embedding"]) raw_norm += x * x;
  EXPECT_GT(std::fabs(std::sqrt(raw_norm) - 1.0), 1e-3);

  ServerProcess server({"--pooling", "mean"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("embeddings: mean pooling (--pooling)"));
  const HttpReply r = http_request(server.port(), "POST", "/v1/embeddings",
                                   json({{"input", kTexts}, {"encoding_format", "float"}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const std::vector<double> got = body["data"][i]["embedding"], want = mean[i]["embedding"];
    ASSERT_EQ(got.size(), want.size());
    for (size_t d = 0; d < got.size(); ++d) EXPECT_NEAR(got[d], want[d], 1e-6) << "text " << i;
  }
}

TEST(ServerEmbeddingsTest, AnUnknownPoolingIsAnError) {
  const ProcessResult embed = run_pagoda({"embed", "--pooling", "max", "hello"});
  EXPECT_NE(embed.exit_code, 0);
  EXPECT_THAT(embed.err, HasSubstr("--pooling must be last, mean or cls"));
  const ProcessResult serve = run_pagoda({"serve", "--port", "0", "--pooling", "none"});
  EXPECT_NE(serve.exit_code, 0);
  EXPECT_THAT(serve.err, HasSubstr("--pooling must be last, mean or cls"));
}

}  // namespace
}  // namespace pagoda::e2e
