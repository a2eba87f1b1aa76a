// pagoda serve as a drop-in for Ollama and llama-server: the official `ollama` npm package and @langchain/ollama
// (node_clients/ollama_test.mjs: list, show, ps, version, chat and generate whole and streamed, format, a forced
// tool call, embed, Ollama's errors) against a server started with llama-server's flag spellings (-c, -t, -np,
// -ub, --jinja, -ngl, -fa), whose start-up lines say what the flags without effect do; llama.cpp's own server
// tests' request shapes for /completion, /tokenize, /detokenize, /props, /slots, /health and /apply-template.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

TEST(ServerDropInTest, TheOllamaClientsWorkUnchanged) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/ollama"))
      << "the ollama npm package is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({"-c", "512", "-t", "1", "-np", "4", "-ub", "64", "--jinja", "-ngl", "99", "-fa", "on"});
  ASSERT_TRUE(server.started()) << server.log();
  // One line each for the flags that do not do here what they do in llama-server.
  EXPECT_THAT(server.log(), HasSubstr("-ngl 99: no effect"));
  EXPECT_THAT(server.log(), HasSubstr("-fa on: the CPU attention kernel is flash"));
  EXPECT_THAT(server.log(), HasSubstr("--jinja: no effect"));
  const std::string out =
      run_command("node " + dir + "/ollama_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
  EXPECT_THAT(server.log(), HasSubstr("/api/chat"));
  // Options without effect here are accepted and named in a log line.
  const HttpReply r = http_request(server.port(), "POST", "/api/generate",
                                   R"({"model": "stories260K", "prompt": "Once", "stream": false,
                                       "options": {"num_gpu": 1, "num_thread": 4, "num_predict": 2}})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(server.log(), HasSubstr("options without effect on this server, accepted and ignored: num_gpu, num_thread"));
}

// The request shapes of llama.cpp's own server tests (its completion, tokenize and basic tests),
// answered in llama-server's shapes.
TEST(ServerDropInTest, LlamaServersEndpointsAnswerItsTestsShapes) {
  ServerProcess server({"-np", "2"});
  ASSERT_TRUE(server.started()) << server.log();
  const int port = server.port();
  const HttpReply whole = http_request(port, "POST", "/completion",
                                       R"({"n_predict": 8, "prompt": "I believe the meaning of life is",
                                           "return_tokens": true, "temperature": 0})");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const nlohmann::json w = nlohmann::json::parse(whole.body);
  EXPECT_EQ(w["timings"]["predicted_n"], 8);
  EXPECT_GT(w["timings"]["prompt_n"].get<int>(), 0);
  EXPECT_EQ(w["truncated"], false);
  EXPECT_TRUE(w["has_new_line"].is_boolean());
  EXPECT_EQ(w["tokens"].size(), 8u);
  EXPECT_EQ(w["stop_type"], "limit");
  // Streamed: every event has a boolean stop; the pieces carry their tokens and make the whole content.
  const HttpReply stream = http_request(port, "POST", "/completion",
                                        R"({"n_predict": 8, "prompt": "I believe the meaning of life is",
                                            "stream": true, "temperature": 0})");
  ASSERT_EQ(stream.status, 200) << stream.body;
  std::string content;
  bool stopped = false;
  for (const std::string& payload : sse_payloads(stream.body)) {
    const nlohmann::json d = nlohmann::json::parse(payload);
    ASSERT_TRUE(d["stop"].is_boolean()) << payload;
    if (d["stop"]) {
      stopped = true;
      EXPECT_EQ(d["timings"]["predicted_n"], 8);
      EXPECT_EQ(d["stop_type"], "limit");
      EXPECT_EQ(d["generation_settings"]["n_predict"], 8);
    } else {
      EXPECT_GT(d["tokens"].size(), 0u);
      content += d["content"].get<std::string>();
    }
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(content, w["content"]);
  EXPECT_THAT(stream.body, ::testing::Not(HasSubstr("[DONE]")));
  const HttpReply probs =
      http_request(port, "POST", "/completion", R"({"n_predict": 3, "prompt": "Once", "n_probs": 2})");
  ASSERT_EQ(probs.status, 200) << probs.body;
  const nlohmann::json cp = nlohmann::json::parse(probs.body)["completion_probabilities"];
  ASSERT_EQ(cp.size(), 3u);
  EXPECT_EQ(cp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(http_request(port, "POST", "/completion", R"({"prompt": "x", "id_slot": 1})").status, 400);

  // /tokenize with llama-server's content: no BOS unless add_special; pieces; /detokenize's content.
  const HttpReply tok = http_request(port, "POST", "/tokenize", R"({"content": "What is the capital of France ?"})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  const nlohmann::json tokens = nlohmann::json::parse(tok.body)["tokens"];
  EXPECT_GT(tokens.size(), 5u);
  const HttpReply bos = http_request(port, "POST", "/tokenize",
                                     R"({"content": "What is the capital of France ?", "add_special": true})");
  EXPECT_EQ(nlohmann::json::parse(bos.body)["tokens"][0], 1);
  const HttpReply detok =
      http_request(port, "POST", "/detokenize", nlohmann::json({{"tokens", tokens}}).dump());
  // SentencePiece's leading space stays, as llama.cpp's test strips it.
  EXPECT_EQ(nlohmann::json::parse(detok.body)["content"], " What is the capital of France ?");
  const HttpReply pieces =
      http_request(port, "POST", "/tokenize", R"({"content": "a test with unicode 媽", "with_pieces": true})");
  for (const nlohmann::json& t : nlohmann::json::parse(pieces.body)["tokens"]) {
    EXPECT_GT(t["id"].get<int>(), 0);
    EXPECT_FALSE(t["piece"].empty());
  }

  const nlohmann::json props = nlohmann::json::parse(http_request(port, "GET", "/props", "").body);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["model_path"], "bundled:stories260K");
  EXPECT_GT(props["default_generation_settings"]["n_ctx"].get<int>(), 0);
  const nlohmann::json slots = nlohmann::json::parse(http_request(port, "GET", "/slots", "").body);
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_FALSE(slots[0].contains("params"));
  EXPECT_EQ(nlohmann::json::parse(http_request(port, "GET", "/health", "").body), nlohmann::json({{"status", "ok"}}));
  // /apply-template: the prompt the chat template renders, as /v1/chat/completions would send it.
  const HttpReply applied =
      http_request(port, "POST", "/apply-template", R"({"messages": [{"role": "user", "content": "Hello there"}]})");
  ASSERT_EQ(applied.status, 200) << applied.body;
  EXPECT_THAT(nlohmann::json::parse(applied.body)["prompt"].get<std::string>(), HasSubstr("Hello there"));
}

// The clients that need zod 4 (zod4_clients/agents_ollama_test.mjs): the @openai/agents SDK in Responses mode runs
// an agent with a tool to its end, and the AI SDK's Ollama provider says the chat endpoint's greedy text.
TEST(ServerDropInTest, TheAgentsSdkAndTheAiSdksOllamaProviderWorkUnchanged) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/zod4_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/@openai/agents"))
      << "@openai/agents is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out = run_command("node " + dir + "/agents_ollama_test.mjs http://127.0.0.1:" +
                                      std::to_string(server.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
  EXPECT_THAT(server.log(), HasSubstr("/v1/responses"));
}

TEST(ServerDropInTest, LlamaServerAliasesActAsPagodasFlags) {
  // The context -c gives is the one /v1/models reports, as --max-seq-len's.
  ServerProcess server({"--ctx-size", "192"});
  ASSERT_TRUE(server.started()) << server.log();
  const HttpReply models = http_request(server.port(), "GET", "/v1/models", "");
  EXPECT_THAT(models.body, HasSubstr("\"max_model_len\":192"));
  // An alias and its own flag together are a contradiction.
  const ProcessResult both = run_pagoda({"serve", "-c", "128", "--max-seq-len", "256", "--port", "0"});
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.err, HasSubstr("excludes"));
  const ProcessResult tb = run_pagoda({"serve", "-t", "1", "-tb", "2", "--port", "0"});
  EXPECT_NE(tb.exit_code, 0);
  EXPECT_THAT(tb.err, HasSubstr("-tb 2 differs from -t/--threads 1"));
}

}  // namespace
}  // namespace pagoda::e2e
