// Several models served at once: `pagoda serve` with the bundled model and a `pagoda gen-model` file
// (--add-model); requests pick one by `model` (OpenAI's, Anthropic's and Ollama's endpoints), /v1/models, /api/tags
// and /api/ps list them, the added one is loaded on first use and unloaded after its keep-alive (a request's
// keep_alive) or when a byte budget needs its room, an unknown name is a 404 in each protocol's shape; the flags'
// errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string chat_body(const std::string& model) {
  return json({{"model", model},
               {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
               {"max_tokens", 4},
               {"temperature", 0}})
      .dump();
}

std::vector<std::string> names_in(const json& list, const char* key, const char* field) {
  std::vector<std::string> out;
  for (const json& m : list[key]) out.push_back(m[field].get<std::string>());
  return out;
}

TEST(ServerMultiModelTest, RequestsPickTheirModelWhichLoadsOnFirstUseAndUnloadsWhenIdle) {
  const TempDir dir;
  const std::string tiny = dir.path() + "/tiny.gguf";
  ProcessResult g = run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", tiny, "--seed", "3"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  ServerProcess server({"--add-model", tiny + "=tiny", "--max-seq-len", "256"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(),
              HasSubstr("serving 2 models ('stories260K', 'tiny'; the first for requests that name none)"));
  const int port = server.port();

  // Listed before it is loaded: configured, not loaded.
  json models = json::parse(http_request(port, "GET", "/v1/models").body);
  EXPECT_EQ(names_in(models, "data", "id"), (std::vector<std::string>{"stories260K", "tiny"}));
  EXPECT_EQ(models["data"][0]["status"]["value"], "loaded");
  EXPECT_EQ(models["data"][1]["status"]["value"], "unloaded");
  EXPECT_EQ(names_in(json::parse(http_request(port, "GET", "/api/tags").body), "models", "name"),
            (std::vector<std::string>{"stories260K:latest", "tiny:latest"}));
  EXPECT_EQ(names_in(json::parse(http_request(port, "GET", "/api/ps").body), "models", "name"),
            std::vector<std::string>{"stories260K:latest"});

  // OpenAI's chat picks by model; the answer names it.
  HttpReply r = http_request(port, "POST", "/v1/chat/completions", chat_body("tiny"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "tiny");
  r = http_request(port, "POST", "/v1/chat/completions", chat_body("stories260K"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "stories260K");
  r = http_request(port, "POST", "/v1/completions", json({{"prompt", "Once"}, {"max_tokens", 2}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "stories260K");  // none named: the first
  EXPECT_THAT(server.log(), HasSubstr("loading model 'tiny'"));
  models = json::parse(http_request(port, "GET", "/v1/models").body);
  EXPECT_EQ(models["data"][1]["status"]["value"], "loaded");
  EXPECT_GT(models["data"][1]["max_model_len"].get<int64_t>(), 0);
  const json ps = json::parse(http_request(port, "GET", "/api/ps").body);
  EXPECT_EQ(names_in(ps, "models", "name"), (std::vector<std::string>{"stories260K:latest", "tiny:latest"}));
  EXPECT_THAT(ps["models"][1]["expires_at"].get<std::string>(), ::testing::Not(HasSubstr("2318")));

  // Each model's metrics under its name.
  const std::string scrape = http_request(port, "GET", "/metrics").body;
  EXPECT_EQ(metric_value(scrape, "pagoda:models_loaded"), std::optional<double>(2));
  EXPECT_THAT(scrape, HasSubstr("pagoda:num_requests_running{model_name=\"tiny\"}"));
  EXPECT_THAT(scrape, HasSubstr("pagoda:num_requests_running{model_name=\"stories260K\"}"));

  // Unknown names: each protocol's 404.
  r = http_request(port, "POST", "/v1/chat/completions", chat_body("nope"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "model_not_found");
  r = http_request(
      port, "POST", "/v1/messages",
      json({{"model", "nope"}, {"max_tokens", 4}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}).dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["type"], "error");
  r = http_request(port, "POST", "/api/chat", json({{"model", "nope"}, {"messages", json::array()}}).dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "model \"nope\" not found, try pulling it first");
  EXPECT_EQ(http_request(port, "GET", "/v1/models/nope").status, 404);
  EXPECT_EQ(json::parse(http_request(port, "GET", "/v1/models/tiny").body)["id"], "tiny");

  // Ollama's generate picks by model, with its tag; its keep_alive unloads the model a second after.
  r = http_request(port, "POST", "/api/generate",
                   json({{"model", "tiny:latest"},
                         {"prompt", "Once"},
                         {"stream", false},
                         {"keep_alive", "1s"},
                         {"options", {{"num_predict", 2}}}})
                       .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "tiny:latest");
  std::vector<std::string> loaded;
  for (int i = 0; i < 50; ++i) {
    loaded = names_in(json::parse(http_request(port, "GET", "/api/ps").body), "models", "name");
    if (loaded.size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(loaded, std::vector<std::string>{"stories260K:latest"});
  // Asked for again, it loads again.
  r = http_request(port, "POST", "/v1/chat/completions", chat_body("tiny"));
  ASSERT_EQ(r.status, 200) << r.body;
}

TEST(ServerMultiModelTest, TheOllamaAndOpenAiClientsPickTheirModel) {
  const std::string clients = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  for (const char* package : {"ollama", "openai"})
    ASSERT_TRUE(std::filesystem::exists(clients + "/node_modules/" + package))
        << package << " is missing: `make test` installs it (npm ci in " << clients << ")";
  const TempDir dir;
  const std::string tiny = dir.path() + "/tiny.gguf";
  ASSERT_EQ(run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", tiny}).exit_code, 0);
  ServerProcess server({"--add-model", tiny, "--max-seq-len", "256"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out = run_command(
      "node " + clients + "/multimodel_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " tiny 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
  EXPECT_THAT(server.log(), HasSubstr("unloading model 'tiny': idle for its keep-alive of 0 s"));
}

// --models-memory: the bundled model (a 1 MiB file and a 40 MiB KV pool here) and tiny (0.3 MiB and 16 MiB) do not
// fit in 51 MiB together, so each load unloads the other, idle one; a model whose file alone exceeds it is refused.
TEST(ServerMultiModelTest, AByteBudgetUnloadsTheIdleModelToMakeRoom) {
  const TempDir dir;
  const std::string tiny = dir.path() + "/tiny.gguf";
  ASSERT_EQ(run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", tiny}).exit_code, 0);
  ServerProcess server({"--add-model", tiny + "=tiny", "--max-seq-len", "256", "--models-memory", "0.05"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("taking at most 0.05 GiB together"));
  HttpReply r = http_request(server.port(), "POST", "/v1/chat/completions", chat_body("tiny"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(names_in(json::parse(http_request(server.port(), "GET", "/api/ps").body), "models", "name"),
            std::vector<std::string>{"tiny:latest"});
  r = http_request(server.port(), "POST", "/v1/chat/completions", chat_body("stories260K"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(names_in(json::parse(http_request(server.port(), "GET", "/api/ps").body), "models", "name"),
            std::vector<std::string>{"stories260K:latest"});
  EXPECT_THAT(server.log(), HasSubstr("unloading model 'stories260K' to make room for 'tiny' (--models-memory"));
  EXPECT_THAT(server.log(), HasSubstr("unloading model 'tiny' to make room for 'stories260K' (--models-memory"));
  const ProcessResult small = run_pagoda({"serve", "--port", "0", "--add-model", tiny, "--models-memory", "0.0001"});
  EXPECT_NE(small.exit_code, 0);
  EXPECT_THAT(small.err, HasSubstr("cannot fit in --models-memory"));
}

TEST(ServerMultiModelTest, FlagsActOnlyWithSeveralModelsAndBadOnesAreRefused) {
  ProcessResult r = run_pagoda({"serve", "--port", "0", "--keep-alive", "1m"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--keep-alive applies to a server of several models (--add-model, --models-dir)"));
  r = run_pagoda({"serve", "--port", "0", "--models-max", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--models-max applies to a server of several models"));
  r = run_pagoda({"serve", "--port", "0", "--add-model", "/nonexistent/x.gguf"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--add-model /nonexistent/x.gguf"));
  const TempDir dir;
  const std::string tiny = dir.path() + "/tiny.gguf";
  ASSERT_EQ(run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", tiny}).exit_code, 0);
  r = run_pagoda({"serve", "--port", "0", "--add-model", tiny, "--keep-alive", "soon"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--keep-alive must be a duration"));
  r = run_pagoda({"serve", "--port", "0", "--add-model", tiny + "=stories260K"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("two models are served as 'stories260K'"));
  r = run_pagoda({"serve", "--port", "0", "--models-dir", dir.path() + "/none"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--models-dir " + dir.path() + "/none"));
  // --models-dir: every GGUF, by its stem; the first is the default model when nothing else names one.
  std::filesystem::copy_file(tiny, dir.path() + "/small.gguf");
  ServerProcess server({"--models-dir", dir.path(), "--max-seq-len", "128"});
  ASSERT_TRUE(server.started()) << server.log();
  const json models = json::parse(http_request(server.port(), "GET", "/v1/models").body);
  EXPECT_EQ(names_in(models, "data", "id"), (std::vector<std::string>{"small", "tiny"}));
  EXPECT_EQ(models["data"][0]["status"]["value"], "loaded");
}

}  // namespace
}  // namespace pagoda::e2e
