// Embeddings end to end: `pagoda embed` (the engine's pooling requests, called from the CLI) prints each text's
// vector, and `pagoda serve`'s /v1/embeddings gives the same ones to the official openai npm package
// (node_clients/embeddings_test.mjs: embeddings.create, one text and several, base64 and float, norm 1,
// dimensions refused); the pooling flags and their errors; a Qwen3-Embedding-style model (last pooling and
// Matryoshka sizes from its metadata) and the --matryoshka-dimensions flag, `dimensions` through the SDK
// (node_clients/embeddings_dimensions_test.mjs) and `pagoda embed --dimensions`.
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

std::string node_clients_dir() { return std::string(PAGODA_TEST_E2E_DIR) + "/node_clients"; }

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
  const std::string dir = node_clients_dir();
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
  EXPECT_THAT(server.log(), HasSubstr("embeddings: last pooling (the default for decoder models); shorter dimensions: "
                                      "none (the model declares none)"));
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

// The texts' `pagoda embed` lines as a file for the node scripts.
std::string write_expected(const TempDir& tmp, const std::vector<json>& lines) {
  std::string expected;
  for (const json& line : lines) expected += line.dump() + "\n";
  write_file(tmp.path() + "/expected.jsonl", expected);
  return tmp.path() + "/expected.jsonl";
}

double norm_of(const json& v) {
  double sum = 0.0;
  for (double x : v) sum += x * x;
  return std::sqrt(sum);
}

// A decoder embedding model as Qwen3-Embedding publishes it (random weights: gen-model's tiny-qwen3-embedding,
// whose config declares Matryoshka sizes 32, 64 and 128): its GGUF's metadata picks last pooling and the sizes,
// `pagoda embed --dimensions` cuts and renormalizes, and the openai SDK gets the same vectors from the server.
// (tests/unit/engine/qwen3_embedding_test.cc checks the engine's vectors against the model's forward pass.)
TEST(ServerEmbeddingsTest, AQwen3EmbeddingModelPoolsItsLastTokenAndGivesItsMatryoshkaSizes) {
  ASSERT_TRUE(std::filesystem::exists(node_clients_dir() + "/node_modules/openai"))
      << "the openai npm package is missing: `make test` installs it (npm ci in " << node_clients_dir() << ")";
  const TempDir tmp;
  const std::string model = tmp.path() + "/qwen3-embedding.gguf";
  const ProcessResult gen = run_pagoda({"gen-model", "--shape", "tiny-qwen3-embedding", "-o", model});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::vector<json> full = embed_lines({"-m", model});
  ASSERT_EQ(full.size(), kTexts.size());
  EXPECT_EQ(full[0]["embedding"].size(), 128u);
  const ProcessResult said = run_pagoda({"embed", "-m", model, "x"});
  EXPECT_THAT(said.err, HasSubstr("last pooling (qwen3.pooling_type)"));

  // --dimensions: the first values, renormalized; sizes the model does not declare are errors.
  const std::vector<json> short_lines = embed_lines({"-m", model, "--dimensions", "32"});
  ASSERT_EQ(short_lines.size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const json& got = short_lines[i]["embedding"];
    ASSERT_EQ(got.size(), 32u);
    EXPECT_NEAR(norm_of(got), 1.0, 1e-5);
    const std::vector<double> whole = full[i]["embedding"];
    const std::vector<double> head(whole.begin(), whole.begin() + 32);
    double head_norm = 0.0;
    for (double x : head) head_norm += x * x;
    head_norm = std::sqrt(head_norm);
    for (size_t d = 0; d < 32; ++d) EXPECT_NEAR(double(got[d]), head[d] / head_norm, 1e-6) << "text " << i;
  }
  const ProcessResult unlisted = run_pagoda({"embed", "-m", model, "--dimensions", "48", "x"});
  EXPECT_EQ(unlisted.exit_code, 1);
  EXPECT_THAT(unlisted.err, HasSubstr("Matryoshka sizes are 32, 64, 128"));
  const ProcessResult any =
      run_pagoda({"embed", "-m", model, "--dimensions", "48", "--matryoshka-dimensions", "any", "x"});
  EXPECT_EQ(any.exit_code, 0) << any.err;

  ServerProcess server({"-m", model, "--served-model-name", "qwen3-embed"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("embeddings: last pooling (qwen3.pooling_type); shorter dimensions: 32, 64, 128 "
                                      "(pagoda.embedding.matryoshka_dimensions)"));
  const std::string out =
      run_command("node " + node_clients_dir() + "/embeddings_dimensions_test.mjs http://127.0.0.1:" +
                  std::to_string(server.port()) + " " + write_expected(tmp, full) + " qwen3-embed 64 48 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

// GPT-2's byte-level spelling of one byte (bytes_to_unicode), as UTF-8.
std::string byte_level_char(int b) {
  int code = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    code = 256 + n;
  }
  std::string out;
  if (code < 0x80) {
    out += char(code);
  } else {
    out += char(0xC0 | (code >> 6));
    out += char(0x80 | (code & 0x3F));
  }
  return out;
}

// A tokenizer.json whose post-processor appends <|endoftext|> after the text, as Qwen3-Embedding's does: the
// converted GGUF says add_eos_token, and every text to embed ends with that token (sentence-transformers' input).
TEST(ServerEmbeddingsTest, ATokenizerThatAppendsEndOfTextEndsEachTextWithIt) {
  const TempDir tmp;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(b)] = b;
  const json sequence = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json end_of_text = {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}};
  json tokenizer = json::object();
  tokenizer["version"] = "1.0";
  tokenizer["normalizer"] = nullptr;
  tokenizer["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  tokenizer["added_tokens"] = json::array({{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}}});
  tokenizer["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({sequence, end_of_text})}};
  tokenizer["decoder"] = {{"type", "ByteLevel"}};
  tokenizer["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  write_file(tmp.path() + "/tokenizer.json", tokenizer.dump());
  const std::string model = tmp.path() + "/m.gguf";
  const ProcessResult gen = run_pagoda(
      {"gen-model", "--shape", "tiny-qwen3-embedding", "--tokenizer", tmp.path() + "/tokenizer.json", "-o", model});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const ProcessResult embed = run_pagoda({"embed", "-m", model, "hi", "hi<|endoftext|>"});
  ASSERT_EQ(embed.exit_code, 0) << embed.err;
  EXPECT_THAT(embed.err, HasSubstr("each text ends with EOS (tokenizer.ggml.add_eos_token)"));
  std::istringstream lines(embed.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  // "hi" is two byte tokens and the appended <|endoftext|>; written out, the token is parsed and one more follows.
  EXPECT_EQ(json::parse(first)["num_tokens"], 3);
  EXPECT_EQ(json::parse(second)["num_tokens"], 4);

  ServerProcess server({"-m", model});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("each text ending with EOS (tokenizer.ggml.add_eos_token)"));
  const HttpReply by_text = http_request(server.port(), "POST", "/v1/embeddings",
                                         json({{"input", "hi"}, {"encoding_format", "float"}}).dump());
  ASSERT_EQ(by_text.status, 200) << by_text.body;
  const HttpReply by_ids = http_request(server.port(), "POST", "/v1/embeddings",
                                        json({{"input", {'h', 'i', 256}}, {"encoding_format", "float"}}).dump());
  ASSERT_EQ(by_ids.status, 200) << by_ids.body;
  EXPECT_EQ(json::parse(by_text.body)["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(json::parse(by_text.body)["data"][0]["embedding"], json::parse(by_ids.body)["data"][0]["embedding"]);
}

// A model whose metadata declares nothing (the bundled stories260K) takes --matryoshka-dimensions.
TEST(ServerEmbeddingsTest, TheMatryoshkaFlagDeclaresSizesForAModelWithout) {
  const TempDir tmp;
  ServerProcess server({"--matryoshka-dimensions", "any"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("shorter dimensions: any size up to 64 (--matryoshka-dimensions)"));
  const std::string out =
      run_command("node " + node_clients_dir() +
                  "/embeddings_dimensions_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " " +
                  write_expected(tmp, embed_lines({})) + " stories260K 20 65 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;

  const ProcessResult bad = run_pagoda({"serve", "--port", "0", "--matryoshka-dimensions", "16,100"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--matryoshka-dimensions: 100 is not a size of this model's 64-dimension embeddings"));
  const ProcessResult refused = run_pagoda({"embed", "--dimensions", "16", "x"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("does not declare Matryoshka"));
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
