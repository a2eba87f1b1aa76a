// Reranking end to end on gen-model's tiny-bert-reranker (a BERT cross-encoder with random weights): `pagoda serve`
// answers llama.cpp's own server tests' request shapes (its server's unit test of rerank: Jina's and TEI's
// formats, top_n, invalid documents, usage) on each of llama-server's four routes, with return_documents and
// return_text; a model without a classification head (tiny-bert) answers 400 saying so, and embeds. Where a built
// llama.cpp is present ($PAGODA_LLAMA_CPP_DIR, default ~/.cache/pagoda-peer/llama.cpp), its llama-server --reranking
// on the same GGUF gives the same scores within 1e-3 and the same token counts, and its --embeddings the same
// mean-pooled vectors; otherwise that part is skipped, visibly. Random weights carry no notion of relevance, so there
// the order of the documents is compared with llama-server's; gen-model's constructed tiny-bert-overlap-reranker
// (its head scores a query word seen again in the document) ranks a relevant document above unrelated ones, through
// pagoda and through llama-server alike. The jina-bert-v2 and nomic-bert families' tiny shapes (a jina reranker, two
// embedders) give llama-server's scores and vectors too, and so do tiny-bert's Q8_0 and Q4_0 files, quantized by
// llama-quantize and by `pagoda quantize`. A decoder reranker (gen-model's tiny-qwen3-reranker, Qwen3-Reranker's
// layout) gives llama-server's scores too; a decoder GGUF marked for rank pooling without that head is refused by
// name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// llama.cpp's rerank test's documents.
const std::vector<std::string> kDocuments = {
    "A machine is a physical system that uses power to apply forces and control movement to perform an action. The "
    "term is commonly applied to artificial devices, such as those employing engines or motors, but also to natural "
    "biological macromolecules, such as molecular machines.",
    "Learning is the process of acquiring new understanding, knowledge, behaviors, skills, values, attitudes, and "
    "preferences. The ability to learn is possessed by humans, non-human animals, and some machines; there is also "
    "evidence for some kind of learning in certain plants.",
    "Machine learning is a field of study in artificial intelligence concerned with the development and study of "
    "statistical algorithms that can learn from data and generalize to unseen data, and thus perform tasks without "
    "explicit instructions.",
    "Paris, capitale de la France, est une grande ville europ\xC3\xA9" "enne et un centre mondial de l'art, de la "
    "mode, de la gastronomie et de la culture. Son paysage urbain du XIXe si\xC3\xA8" "cle est travers\xC3\xA9 par de "
    "larges boulevards et la Seine."};
const char* const kQuery = "Machine learning is";

std::string gen_model(const TempDir& tmp, const std::string& shape) {
  const std::string path = tmp.path() + "/" + shape + ".gguf";
  const ProcessResult r = run_pagoda({"gen-model", "--shape", shape, "-o", path, "--seed", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

json post(int port, const std::string& path, const json& body, int expected_status = 200) {
  const HttpReply r = http_request(port, "POST", path, body.dump());
  EXPECT_EQ(r.status, expected_status) << path << " " << body.dump() << ": " << r.body;
  return r.body.empty() ? json() : json::parse(r.body, nullptr, false);
}

// No step budget given: an encoder's default step holds an input as long as its context (512 positions).
const std::vector<std::string> kServeArgs = {};

TEST(ServerRerankTest, LlamaServersRerankTestShapes) {
  const TempDir tmp;
  std::vector<std::string> args = {"-m", gen_model(tmp, "tiny-bert-reranker")};
  args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
  ServerProcess server(args);
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("rerank: /v1/rerank scores each query/document pair"));
  const int port = server.port();

  // test_rerank / test_rerank_tei_format: every document scored, highest first.
  for (const char* route : {"/rerank", "/v1/rerank", "/reranking", "/v1/reranking"}) {
    const json jina = post(port, route, {{"query", kQuery}, {"documents", kDocuments}});
    ASSERT_EQ(jina["results"].size(), kDocuments.size()) << route;
    EXPECT_EQ(jina["object"], "list");
    std::vector<int> seen;
    for (size_t i = 0; i < jina["results"].size(); ++i) {
      const json& r = jina["results"][i];
      seen.push_back(r["index"].get<int>());
      EXPECT_FALSE(r.contains("document"));
      if (i > 0) {
        EXPECT_GE(jina["results"][i - 1]["relevance_score"].get<double>(), r["relevance_score"].get<double>());
      }
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3})) << route;
    EXPECT_EQ(jina["usage"]["prompt_tokens"], jina["usage"]["total_tokens"]);
    EXPECT_GT(jina["usage"]["prompt_tokens"].get<int>(), 0);

    const json tei = post(port, route, {{"query", kQuery}, {"texts", kDocuments}});
    ASSERT_TRUE(tei.is_array()) << tei.dump();
    ASSERT_EQ(tei.size(), kDocuments.size());
    // The same scores in TEI's shape.
    for (size_t i = 0; i < tei.size(); ++i) {
      EXPECT_EQ(tei[i]["index"], jina["results"][i]["index"]);
      EXPECT_EQ(tei[i]["score"], jina["results"][i]["relevance_score"]);
    }
  }

  // test_invalid_rerank_req.
  for (const json& documents : {json::array(), json(nullptr), json(123), json({1, 2, 3})}) {
    const json e = post(port, "/rerank", {{"query", kQuery}, {"documents", documents}}, 400);
    EXPECT_TRUE(e.contains("error")) << e.dump();
  }

  // test_rerank_usage: the query and both documents, each pair framed as [CLS] query [SEP] document.
  const json usage = post(port, "/rerank", {{"query", kQuery}, {"documents", {"A machine", "Learning is"}}});
  auto count = [&](const std::string& text) {
    return post(port, "/tokenize", {{"content", text}})["tokens"].size();
  };
  EXPECT_EQ(usage["usage"]["prompt_tokens"].get<size_t>(),
            2 * (2 + count(kQuery)) + count("A machine") + count("Learning is"));

  // test_rerank_top_n and test_rerank_tei_top_n, with the documents returned.
  for (auto [top_n, expected] : std::vector<std::pair<int, size_t>>{{2, 2}, {4, 4}, {99, 4}}) {
    const json jina = post(port, "/rerank",
                           {{"query", kQuery}, {"documents", kDocuments}, {"top_n", top_n}, {"return_documents", true}});
    ASSERT_EQ(jina["results"].size(), expected);
    for (const json& r : jina["results"]) EXPECT_EQ(r["document"]["text"], kDocuments[r["index"].get<size_t>()]);
    const json tei =
        post(port, "/rerank", {{"query", kQuery}, {"texts", kDocuments}, {"top_n", top_n}, {"return_text", true}});
    ASSERT_EQ(tei.size(), expected);
    for (const json& r : tei) EXPECT_EQ(r["text"], kDocuments[r["index"].get<size_t>()]);
  }
  // An input past the step budget is a 400, not a hang.
  std::string long_doc;
  for (int i = 0; i < 600; ++i) long_doc += "panda ";
  const json too_long = post(port, "/v1/rerank", {{"query", kQuery}, {"documents", {long_doc}}}, 400);
  EXPECT_TRUE(too_long.contains("error")) << too_long.dump();
  // An encoder generates no text.
  const json gen = post(port, "/v1/completions", {{"prompt", "hello"}, {"max_tokens", 4}}, 400);
  EXPECT_THAT(gen.dump(), HasSubstr("encoder"));
}

TEST(ServerRerankTest, AModelWithoutAHeadRefusesRerankAndEmbeds) {
  const TempDir tmp;
  std::vector<std::string> args = {"-m", gen_model(tmp, "tiny-bert")};
  args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
  ServerProcess server(args);
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("embeddings: mean pooling (bert.pooling_type)"));
  const json e = post(server.port(), "/v1/rerank", {{"query", kQuery}, {"documents", kDocuments}}, 400);
  EXPECT_THAT(e["error"]["message"].get<std::string>(), HasSubstr("not a reranker: it has no classification head"));
  const json emb = post(server.port(), "/v1/embeddings", {{"input", kDocuments}, {"encoding_format", "float"}});
  ASSERT_EQ(emb["data"].size(), kDocuments.size());
  EXPECT_EQ(emb["data"][0]["embedding"].size(), 64u);
}

const json kRelevance = {{"query", "what pandas eat"},
                         {"documents",
                          {"the weather in paris today", "pandas eat bamboo", "the capital of france",
                           "bears eat red cat", "hello world"}}};

TEST(ServerRerankTest, TheOverlapRerankerRanksTheRelevantDocumentFirst) {
  const TempDir tmp;
  std::vector<std::string> args = {"-m", gen_model(tmp, "tiny-bert-overlap-reranker")};
  args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
  ServerProcess server(args);
  ASSERT_TRUE(server.started()) << server.log();
  const json r = post(server.port(), "/v1/rerank", kRelevance);
  ASSERT_EQ(r["results"].size(), 5u) << r.dump();
  EXPECT_EQ(r["results"][0]["index"], 1) << r.dump();  // two query words again
  EXPECT_EQ(r["results"][1]["index"], 3) << r.dump();  // one
  EXPECT_GT(r["results"][0]["relevance_score"].get<double>(), r["results"][1]["relevance_score"].get<double>() + 0.01);
  for (size_t i = 2; i < 5; ++i)
    EXPECT_LT(r["results"][i]["relevance_score"].get<double>(), r["results"][1]["relevance_score"].get<double>() - 0.5)
        << r.dump();
}

// llama.cpp's llama-server on the same file, when it is built and runs here (a peer built for another CPU, or one
// that cannot start, is a visible skip with its log's last line, not a failure of pagoda).
class PeerServer {
 public:
  PeerServer(const std::vector<std::string>& args, const std::string& log) {
    const char* env = std::getenv("PAGODA_LLAMA_CPP_DIR");
    const char* home = std::getenv("HOME");
    const fs::path bin = (env != nullptr && *env != '\0' ? fs::path(env) : fs::path(home != nullptr ? home : "") /
                                                                               ".cache/pagoda-peer/llama.cpp") /
                         "build/bin/llama-server";
    if (!fs::exists(bin)) {
      absent_ = "llama.cpp's llama-server is not built (set PAGODA_LLAMA_CPP_DIR)";
      return;
    }
    port_ = free_loopback_port();
    std::string cmd = bin.string() + " --host 127.0.0.1 --port " + std::to_string(port_) + " -t 2 -np 1";
    for (const std::string& a : args) cmd += " '" + a + "'";
    pid_ = std::atoi(run_command(cmd + " > " + log + " 2>&1 & echo $!").c_str());
    for (int i = 0; i < 600; ++i) {
      if (http_request(port_, "GET", "/health", "", {}, std::chrono::seconds(1)).status == 200) return;
      if (pid_ <= 0 || ::kill(pid_, 0) != 0) break;  // it exited
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string said = read_file(log);
    while (!said.empty() && said.back() == '\n') said.pop_back();
    const size_t last = said.rfind('\n');
    absent_ = "llama-server did not come up on port " + std::to_string(port_) + ": " +
              (last == std::string::npos ? said : said.substr(last + 1));
  }
  ~PeerServer() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }
  // Empty when the peer answers; otherwise why it does not.
  const std::string& absent() const { return absent_; }
  int port() const { return port_; }

 private:
  std::string absent_;
  int port_ = 0;
  int pid_ = 0;
};

TEST(ServerRerankTest, ScoresAndEmbeddingsEqualLlamaServers) {
  const TempDir tmp;
  const std::string reranker = gen_model(tmp, "tiny-bert-reranker");
  {
    PeerServer peer({"-m", reranker, "--reranking", "-c", "512", "-ub", "512", "-b", "512"}, tmp.path() + "/peer.log");
    if (!peer.absent().empty()) GTEST_SKIP() << peer.absent();
    std::vector<std::string> args = {"-m", reranker};
    args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
    ServerProcess server(args);
    ASSERT_TRUE(server.started()) << server.log();
    for (const json& body : {json{{"query", kQuery}, {"documents", kDocuments}},
                             json{{"query", "Which city?"}, {"documents", {"Machine learning is ", "Paris, capitale de la"}}}}) {
      const json want = post(peer.port(), "/v1/rerank", body);
      const json got = post(server.port(), "/v1/rerank", body);
      ASSERT_EQ(got["results"].size(), want["results"].size()) << read_file(tmp.path() + "/peer.log");
      EXPECT_EQ(got["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
      // By document: random weights score them within a hair of each other, so the order may differ in the 4th digit.
      std::map<int, double> want_by_index;
      for (const json& r : want["results"]) want_by_index[r["index"].get<int>()] = r["relevance_score"].get<double>();
      for (const json& r : got["results"])
        EXPECT_NEAR(r["relevance_score"].get<double>(), want_by_index.at(r["index"].get<int>()), 1e-3) << r.dump();
    }
  }
  {
    const std::string overlap = gen_model(tmp, "tiny-bert-overlap-reranker");
    PeerServer peer({"-m", overlap, "--reranking", "-c", "512", "-ub", "512", "-b", "512"}, tmp.path() + "/peer1.log");
    ASSERT_TRUE(peer.absent().empty()) << peer.absent();
    std::vector<std::string> args = {"-m", overlap};
    args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
    ServerProcess server(args);
    ASSERT_TRUE(server.started()) << server.log();
    const json want = post(peer.port(), "/v1/rerank", kRelevance);
    const json got = post(server.port(), "/v1/rerank", kRelevance);
    ASSERT_EQ(got["results"].size(), want["results"].size()) << read_file(tmp.path() + "/peer1.log");
    for (size_t i = 0; i < want["results"].size(); ++i) {
      EXPECT_EQ(got["results"][i]["index"], want["results"][i]["index"]) << "rank " << i;
      EXPECT_NEAR(got["results"][i]["relevance_score"].get<double>(),
                  want["results"][i]["relevance_score"].get<double>(), 1e-3)
          << "rank " << i;
    }
  }
  const std::string embedder = gen_model(tmp, "tiny-bert");
  PeerServer peer({"-m", embedder, "--embeddings", "-c", "512", "-ub", "512", "-b", "512"}, tmp.path() + "/peer2.log");
  ASSERT_TRUE(peer.absent().empty()) << peer.absent();
  std::vector<std::string> args = {"-m", embedder};
  args.insert(args.end(), kServeArgs.begin(), kServeArgs.end());
  ServerProcess server(args);
  ASSERT_TRUE(server.started()) << server.log();
  const json body = {{"input", kDocuments}, {"encoding_format", "float"}};
  const json want = post(peer.port(), "/v1/embeddings", body);
  const json got = post(server.port(), "/v1/embeddings", body);
  ASSERT_EQ(got["data"].size(), want["data"].size()) << read_file(tmp.path() + "/peer2.log");
  for (size_t i = 0; i < want["data"].size(); ++i) {
    const json& a = got["data"][i]["embedding"];
    const json& b = want["data"][i]["embedding"];
    ASSERT_EQ(a.size(), b.size());
    double max_diff = 0.0;
    for (size_t k = 0; k < a.size(); ++k) max_diff = std::max(max_diff, std::fabs(a[k].get<double>() - b[k].get<double>()));
    EXPECT_LT(max_diff, 1e-3) << "input " << i;
  }
}

// jina-bert-v2 (ALiBi, GEGLU, Q/K LayerNorms; a one-row head as jina-reranker-v1's) and nomic-bert (RoPE, fused QKV,
// SwiGLU): rerank scores and mean-pooled embeddings equal llama-server's on the same files.
TEST(ServerRerankTest, JinaBertAndNomicBertEqualLlamaServers) {
  const TempDir tmp;
  {
    const std::string reranker = gen_model(tmp, "tiny-jina-bert-reranker");
    PeerServer peer({"-m", reranker, "--reranking", "-c", "1024", "-ub", "1024", "-b", "1024"},
                    tmp.path() + "/peer.log");
    if (!peer.absent().empty()) GTEST_SKIP() << peer.absent();
    ServerProcess server({"-m", reranker});
    ASSERT_TRUE(server.started()) << server.log();
    for (const json& body : {json{{"query", kQuery}, {"documents", kDocuments}}, kRelevance}) {
      const json want = post(peer.port(), "/v1/rerank", body);
      const json got = post(server.port(), "/v1/rerank", body);
      ASSERT_EQ(got["results"].size(), want["results"].size()) << read_file(tmp.path() + "/peer.log");
      EXPECT_EQ(got["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
      std::map<int, double> want_by_index;
      for (const json& r : want["results"]) want_by_index[r["index"].get<int>()] = r["relevance_score"].get<double>();
      for (const json& r : got["results"])
        EXPECT_NEAR(r["relevance_score"].get<double>(), want_by_index.at(r["index"].get<int>()), 1e-3) << r.dump();
    }
  }
  for (const char* shape : {"tiny-jina-bert", "tiny-nomic-bert"}) {
    const std::string embedder = gen_model(tmp, shape);
    const std::string log = tmp.path() + "/" + shape + ".log";
    PeerServer peer({"-m", embedder, "--embeddings", "-c", "1024", "-ub", "1024", "-b", "1024"}, log);
    ASSERT_TRUE(peer.absent().empty()) << peer.absent();
    ServerProcess server({"-m", embedder});
    ASSERT_TRUE(server.started()) << server.log();
    const json body = {{"input", kDocuments}, {"encoding_format", "float"}};
    const json want = post(peer.port(), "/v1/embeddings", body);
    const json got = post(server.port(), "/v1/embeddings", body);
    ASSERT_EQ(got["data"].size(), want["data"].size()) << read_file(log);
    for (size_t i = 0; i < want["data"].size(); ++i) {
      const json& a = got["data"][i]["embedding"];
      const json& b = want["data"][i]["embedding"];
      ASSERT_EQ(a.size(), b.size()) << shape;
      double max_diff = 0.0;
      for (size_t k = 0; k < a.size(); ++k)
        max_diff = std::max(max_diff, std::fabs(a[k].get<double>() - b[k].get<double>()));
      EXPECT_LT(max_diff, 1e-3) << shape << " input " << i;
    }
  }
}

// Quantized BERT: tiny-bert's Q8_0 and Q4_0 made by llama.cpp's llama-quantize and by `pagoda quantize` (the same
// bytes) load and embed as llama-server does on the same file, and close to the f32 model's vectors.
TEST(ServerRerankTest, QuantizedBertFilesLoadAndEqualLlamaServers) {
  const TempDir tmp;
  const std::string f32 = gen_model(tmp, "tiny-bert");
  const char* env = std::getenv("PAGODA_LLAMA_CPP_DIR");
  const char* home = std::getenv("HOME");
  const fs::path quantizer =
      (env != nullptr && *env != '\0' ? fs::path(env)
                                      : fs::path(home != nullptr ? home : "") / ".cache/pagoda-peer/llama.cpp") /
      "build/bin/llama-quantize";
  if (!fs::exists(quantizer)) GTEST_SKIP() << "llama.cpp's llama-quantize is not built (set PAGODA_LLAMA_CPP_DIR)";
  const json body = {{"input", kDocuments}, {"encoding_format", "float"}};
  json reference;
  {
    ServerProcess server({"-m", f32});
    ASSERT_TRUE(server.started()) << server.log();
    reference = post(server.port(), "/v1/embeddings", body);
  }
  for (const char* type : {"Q8_0", "Q4_0"}) {
    const std::string by_llama = tmp.path() + "/llama-" + type + ".gguf",
                      by_pagoda = tmp.path() + "/pagoda-" + type + ".gguf";
    const std::string out = run_command(quantizer.string() + " '" + f32 + "' '" + by_llama + "' " + type + " 1 2>&1");
    ASSERT_TRUE(fs::exists(by_llama)) << out;
    const ProcessResult q = run_pagoda({"quantize", f32, by_pagoda, "--type", type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_TRUE(read_file(by_llama) == read_file(by_pagoda)) << type << ": pagoda quantize differs from llama-quantize";
    for (const std::string& file : {by_llama, by_pagoda}) {
      PeerServer peer({"-m", file, "--embeddings", "-c", "512", "-ub", "512", "-b", "512"}, tmp.path() + "/q.log");
      if (!peer.absent().empty()) GTEST_SKIP() << peer.absent();
      ServerProcess server({"-m", file});
      ASSERT_TRUE(server.started()) << server.log();
      const json want = post(peer.port(), "/v1/embeddings", body);
      const json got = post(server.port(), "/v1/embeddings", body);
      ASSERT_EQ(got["data"].size(), want["data"].size()) << read_file(tmp.path() + "/q.log");
      for (size_t i = 0; i < want["data"].size(); ++i) {
        const json& a = got["data"][i]["embedding"];
        const json& b = want["data"][i]["embedding"];
        const json& r = reference["data"][i]["embedding"];
        ASSERT_EQ(a.size(), b.size());
        double max_diff = 0.0, cosine = 0.0;
        for (size_t k = 0; k < a.size(); ++k) {
          max_diff = std::max(max_diff, std::fabs(a[k].get<double>() - b[k].get<double>()));
          cosine += a[k].get<double>() * r[k].get<double>();  // both of norm 1
        }
        EXPECT_LT(max_diff, 1e-3) << file << " input " << i;
        EXPECT_GT(cosine, std::string(type) == "Q8_0" ? 0.999 : 0.98) << file << " input " << i;
      }
    }
  }
}

// A decoder GGUF that says rank pooling without the head pagoda scores it with (a qwen3 file's cls.output.weight) is
// refused by name when serve starts, rather than served with a pooling it does not have.
TEST(ServerRerankTest, ADecoderMarkedForRankWithoutAHeadIsRefusedByName) {
  const TempDir tmp;
  const std::string plain = gen_model(tmp, "tiny-qwen3"), marked = tmp.path() + "/qwen3-rank.gguf";
  {
    auto f = format::GgufFile::open(plain);
    ASSERT_TRUE(f.ok()) << f.error();
    format::GgufWriter w;
    for (const auto& [key, value] : f->metadata()) w.set(key, value);
    w.set("qwen3.pooling_type", format::GgufValue::u32(4));
    for (const format::GgufTensorInfo& t : f->tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    ASSERT_TRUE(w.write(marked).ok());
  }
  ServerProcess server({"-m", marked});
  EXPECT_FALSE(server.started());
  EXPECT_NE(server.wait_exit(std::chrono::seconds(30)), 0);
  EXPECT_THAT(server.log(), HasSubstr("qwen3.pooling_type = 4 (rank) on a qwen3 decoder without a reranker head"));
  EXPECT_THAT(server.log(), HasSubstr("cls.output.weight"));
}

// A decoder reranker (gen-model's tiny-qwen3-reranker: a qwen3 GGUF as llama.cpp's converter writes Qwen3-Reranker,
// with rank pooling, a yes/no head and the rerank template; random weights): each pair is framed by the template,
// its last token's row goes through the head, and the score is the softmax's "yes". llama-server --reranking on the
// same file gives the same scores within 1e-3 and the same token counts. Random weights carry no notion of
// relevance (the last token is the template's, so every document scores near the others), so no order is asserted
// beyond llama-server's: the scores are compared by document, each a probability.
TEST(ServerRerankTest, TheQwen3RerankerEqualsLlamaServers) {
  const TempDir tmp;
  const std::string reranker = gen_model(tmp, "tiny-qwen3-reranker");
  ServerProcess server({"-m", reranker});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("the last token's row through cls.output"));
  EXPECT_THAT(server.log(), HasSubstr("framed by tokenizer.chat_template.rerank"));
  EXPECT_THAT(server.log(), HasSubstr("embeddings: last pooling (qwen3.pooling_type = 4 (rank)"));
  const std::vector<json> bodies = {json{{"query", kQuery}, {"documents", kDocuments}}, kRelevance,
                                    json{{"query", "pandas"}, {"documents", {"pandas", "pandas eat bamboo", "x"}}}};
  std::vector<json> got;
  for (const json& body : bodies) {
    got.push_back(post(server.port(), "/v1/rerank", body));
    ASSERT_EQ(got.back()["results"].size(), body["documents"].size()) << got.back().dump();
    for (const json& r : got.back()["results"]) {
      EXPECT_GT(r["relevance_score"].get<double>(), 0.0) << r.dump();
      EXPECT_LT(r["relevance_score"].get<double>(), 1.0) << r.dump();
    }
  }
  // The template frames the pair: its tokens, the query's and the document's.
  auto count = [&](const std::string& text) {
    return post(server.port(), "/tokenize", {{"content", text}})["tokens"].size();
  };
  const json usage = post(server.port(), "/rerank", {{"query", "pandas"}, {"documents", {"bamboo"}}});
  EXPECT_GT(usage["usage"]["prompt_tokens"].get<size_t>(), count("pandas") + count("bamboo") + 40);
  // Embeddings are the row the head reads.
  const json emb = post(server.port(), "/v1/embeddings", {{"input", "pandas"}, {"encoding_format", "float"}});
  EXPECT_EQ(emb["data"][0]["embedding"].size(), 128u);

  PeerServer peer({"-m", reranker, "--reranking", "-c", "1024", "-ub", "1024", "-b", "1024"}, tmp.path() + "/peer.log");
  if (!peer.absent().empty()) GTEST_SKIP() << peer.absent();
  for (size_t b = 0; b < bodies.size(); ++b) {
    const json want = post(peer.port(), "/v1/rerank", bodies[b]);
    ASSERT_EQ(got[b]["results"].size(), want["results"].size()) << read_file(tmp.path() + "/peer.log");
    EXPECT_EQ(got[b]["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]) << bodies[b].dump();
    std::map<int, double> want_by_index;
    for (const json& r : want["results"]) want_by_index[r["index"].get<int>()] = r["relevance_score"].get<double>();
    for (const json& r : got[b]["results"])
      EXPECT_NEAR(r["relevance_score"].get<double>(), want_by_index.at(r["index"].get<int>()), 1e-3) << r.dump();
  }
}

}  // namespace
}  // namespace pagoda::e2e
