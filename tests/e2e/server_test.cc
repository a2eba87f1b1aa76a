// `pagoda serve` end to end: the real binary on a loopback port, driven by curl, the official openai npm
// package and a raw-socket client: the golden text over HTTP, the API's shapes, metrics, auth, deadlines,
// disconnects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The Foundation golden: greedy continuation of "Once upon a time" (196 tokens), prompt not included.
constexpr const char* kGoldenContinuation =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she "
    "saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do. She said, \"I want "
    "to play with your ball, but I can't find it.\"\n"
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what to do.\"\n"
    "Lily didn't want to help her mom, so she";

std::string url(const ServerProcess& s, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(s.port()) + path;
}

TEST(ServerTest, CurlGetsTheGoldenTextStreamedAndNot) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 196, "temperature": 0})";
  const json whole = json::parse(run_command("curl -s " + url(server, "/v1/completions") + " -d '" + body + "'"));
  EXPECT_EQ(whole["choices"][0]["text"], kGoldenContinuation);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 196);

  const std::string stream_body =
      R"({"prompt": "Once upon a time", "max_tokens": 196, "temperature": 0, "stream": true})";
  const std::string sse = run_command("curl -s -N " + url(server, "/v1/completions") + " -d '" + stream_body + "'");
  std::string joined;
  std::vector<std::string> events = sse_payloads(sse);
  ASSERT_GE(events.size(), 3u) << sse;
  EXPECT_EQ(events.back(), "[DONE]");
  events.pop_back();
  for (const std::string& e : events) joined += json::parse(e)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(joined, kGoldenContinuation);
}

TEST(ServerTest, OfficialOpenAiNpmClientWorksUnchanged) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/openai"))
      << "the openai npm package is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const TempDir tmp_holder;
  const std::string& tmp = tmp_holder.path();
  write_file(tmp + "/golden.txt", kGoldenContinuation);
  const std::string out =
      run_command("node " + dir + "/client_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " " + tmp +
                  "/golden.txt 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

TEST(ServerTest, TheChatPageStreamsAReplyInHeadlessChromium) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/playwright-core"))
      << "playwright-core is missing: `make test` installs it (npm ci in " << dir << ")";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium")) << "Debian's chromium is missing: `make test` installs it";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  // Greedy, 40 tokens: the golden text's start.
  const std::string out =
      run_command("node " + dir + "/chat_page_test.mjs http://127.0.0.1:" + std::to_string(server.port()) +
                  " ', there was a little girl named Lily. She loved to play' 2>&1");
  EXPECT_THAT(out, HasSubstr("chat page ok")) << out;
}

TEST(ServerTest, TheChatPagesStopSendAndHistoryWorkAtDesktopAndPhoneWidths) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/playwright-core"))
      << "playwright-core is missing: `make test` installs it (npm ci in " << dir << ")";
  // A random stories15M-shaped model (26 MB, Q8_0): a few ms a token, so Stop lands mid-stream even when the
  // browser is slow to read the first chunk (the bundled model writes its whole reply in half a second).
  const TempDir tmp_holder;
  const std::string model = write_slow_model(tmp_holder);
  ServerProcess server({"-m", model});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out = run_command(
      "node " + dir + "/chat_page_controls_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " 200 2>&1");
  EXPECT_THAT(out, HasSubstr("chat page controls ok")) << out;
  // Stop ended each reply in the server too (one per width), not only in the page.
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(10)));
  const std::string name = json::parse(http_request(server.port(), "GET", "/v1/models").body)["data"][0]["id"];
  EXPECT_EQ(metric_value(metrics(server),
                         "pagoda:request_success_total{model_name=\"" + name + "\",finished_reason=\"abort\"}"),
            2.0);
}

TEST(ServerTest, AGgufChatTemplateIsRunAsJinja) {
  // The bundled checkpoint converted with a Jinja template of our own: system text first, then the user's
  // turns; an assistant turn first is refused with raise_exception, as real templates refuse bad role orders.
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  write_file(dir + "/template.jinja",
             "{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('the chat must not start with the "
             "assistant') }}{% endif %}{{ bos_token }}{% for m in messages %}{% if not loop.first %}\n{% endif %}"
             "{{ m['content'] | trim }}{% endfor %}");
  const std::string model = dir + "/templated.gguf";
  const std::string assets = std::string(PAGODA_TEST_ASSETS_DIR) + "/models/stories260K/";
  const ProcessResult conv =
      run_pagoda({"convert", "--from", "llama2c", assets + "stories260K.bin", assets + "tok512.bin", "-o", model,
                  "--chat-template-file", dir + "/template.jinja"});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  ServerProcess server({"-m", model});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("tokenizer.chat_template (Jinja)"));
  EXPECT_THAT(server.log(), HasSubstr("tool calls parsed as hermes\n"));  // the template shows no markers
  // The template writes BOS as text; the server turns it into the BOS token, so the golden text comes back.
  const HttpReply r = http_request(
      server.port(), "POST", "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "  Once upon a time "}], "max_tokens": 196, "temperature": 0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["message"]["content"], kGoldenContinuation);
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], 5);
  const HttpReply refused = http_request(server.port(), "POST", "/v1/chat/completions",
                                         R"({"messages": [{"role": "assistant", "content": "Hi"}]})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_THAT(json::parse(refused.body)["error"]["message"].get<std::string>(),
              HasSubstr("the chat must not start with the assistant"));
}

TEST(ServerTest, AChatTemplateFileAndSystemMessageMerging) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  // Gemma's rule: no system role.
  write_file(dir + "/no_system.jinja",
             "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
             "{% for m in messages %}{{ m['content'] }}{% endfor %}");
  const std::string chat = R"({"messages": [{"role": "system", "content": "Once upon"}, )"
                           R"({"role": "user", "content": "a time"}], "max_tokens": 4, "temperature": 0})";
  {
    ServerProcess server({"--chat-template-file", dir + "/no_system.jinja"});
    ASSERT_TRUE(server.started()) << server.log();
    EXPECT_THAT(server.log(), HasSubstr("no_system.jinja (--chat-template-file, Jinja)"));
    EXPECT_THAT(server.log(), HasSubstr("the chat template refuses a system message"));
    const HttpReply r = http_request(server.port(), "POST", "/v1/chat/completions", chat);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_THAT(r.body, HasSubstr("System role not supported"));
  }
  ServerProcess server({"--chat-template-file", dir + "/no_system.jinja", "--merge-system-message"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("system message merged into the first user message"));
  EXPECT_THAT(server.log(), Not(HasSubstr("refuses a system message")));
  const HttpReply r = http_request(server.port(), "POST", "/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  // The same prompt as one user message holding both texts, a blank line between.
  const HttpReply same = http_request(
      server.port(), "POST", "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "Once upon\n\na time"}], "max_tokens": 4, "temperature": 0})");
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], json::parse(same.body)["usage"]["prompt_tokens"]);
  EXPECT_EQ(json::parse(r.body)["choices"][0]["message"]["content"],
            json::parse(same.body)["choices"][0]["message"]["content"]);
  // A file that does not parse is a start-up error naming it.
  write_file(dir + "/broken.jinja", "{% for %}");
  const ProcessResult bad = run_pagoda({"serve", "--port", "0", "--chat-template-file", dir + "/broken.jinja"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--chat-template-file " + dir + "/broken.jinja: "));
}

TEST(ServerTest, ChatTemplateKwargsReachTheTemplate) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  // Qwen3's switch: with enable_thinking false, the template writes something more.
  write_file(dir + "/think.jinja",
             "{% if enable_thinking is defined and not enable_thinking %}Once upon a time {% endif %}"
             "{{ messages[0]['content'] }}");
  ServerProcess server({"--chat-template-file", dir + "/think.jinja"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string chat = R"({"messages": [{"role": "user", "content": "the cat"}], "max_tokens": 1)";
  const HttpReply plain = http_request(server.port(), "POST", "/v1/chat/completions", chat + "}");
  const HttpReply off = http_request(server.port(), "POST", "/v1/chat/completions",
                                     chat + R"(, "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_GT(json::parse(off.body)["usage"]["prompt_tokens"].get<int>(),
            json::parse(plain.body)["usage"]["prompt_tokens"].get<int>() + 2);
}

TEST(ServerTest, ToolCallParserFlagChoosesTheFormatAndABadOneIsAClearError) {
  ServerProcess server({"--tool-call-parser", "mistral"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("tool calls parsed as mistral (--tool-call-parser)"));
  const ProcessResult bad = run_pagoda({"serve", "--port", "0", "--tool-call-parser", "pythonic"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--tool-call-parser must be auto, hermes, mistral or llama3_json, got 'pythonic'"));
}

TEST(ServerTest, HealthModelsTokenizeAndTheChatPage) {
  ServerProcess server({"--served-model-name", "tiny-stories"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
  const HttpReply models = http_request(server.port(), "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "tiny-stories");
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/models/tiny-stories").status, 200);
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/models/other").status, 404);

  const HttpReply tok = http_request(server.port(), "POST", "/tokenize", R"({"prompt": "Once upon a time"})");
  ASSERT_EQ(tok.status, 200);
  const json ids = json::parse(tok.body)["tokens"];
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[0], 1);  // BOS
  // llama.cpp's parse_special: "</s>" written in the prompt is EOS (2) unless it is false.
  const auto tokenize = [&](const std::string& body) { return http_request(server.port(), "POST", "/tokenize", body); };
  const json parsed = json::parse(tokenize(R"({"prompt": "Once</s>"})").body)["tokens"];
  EXPECT_EQ(parsed, json::array({1, 403, 2}));
  const json plain = json::parse(tokenize(R"({"prompt": "Once</s>", "parse_special": false})").body)["tokens"];
  EXPECT_EQ(plain.size(), 6u);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  const HttpReply bad = tokenize(R"({"prompt": "x", "parse_special": "no"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("parse_special"));
  const HttpReply detok = http_request(server.port(), "POST", "/detokenize", json({{"tokens", ids}}).dump());
  ASSERT_EQ(detok.status, 200);
  EXPECT_EQ(json::parse(detok.body)["prompt"], "Once upon a time");
  EXPECT_EQ(http_request(server.port(), "POST", "/detokenize", R"({"tokens": [99999]})").status, 400);

  // A browser asks for HTML; a client that does not gets Ollama's "Ollama is running" (SERVER_API.md).
  const HttpReply page = http_request(server.port(), "GET", "/", "", {"Accept: text/html,*/*"});
  ASSERT_EQ(page.status, 200);
  EXPECT_THAT(page.headers, HasSubstr("text/html"));
  EXPECT_THAT(page.body, HasSubstr("<title>pagoda chat: tiny-stories</title>"));
  EXPECT_THAT(page.body, HasSubstr("/v1/chat/completions"));
  EXPECT_EQ(page.body.find("http://"), std::string::npos) << "the page must not load external assets";
}

TEST(ServerTest, ApiKeyGuardsTheApiButNotHealth) {
  ServerProcess server({"--api-key", "s3cret"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string body = R"({"prompt": "Once", "max_tokens": 2})";
  const HttpReply none = http_request(server.port(), "POST", "/v1/completions", body);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(json::parse(none.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/completions", body, {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/models").status, 401);
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/completions", body, {"Authorization: Bearer s3cret"}).status, 200);
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
}

TEST(ServerTest, MetricsHaveVllmNamesAndCountRequests) {
  ServerProcess server({"--kv-blocks", "64"});
  ASSERT_TRUE(server.started()) << server.log();
  // A 40-token prompt twice: the second finds the first's two full blocks (32 tokens) in the prefix cache.
  std::string prompt = "Once upon a time there was a little dog who liked to run and play in the big green park";
  for (int i = 0; i < 2; ++i) {
    const HttpReply r = http_request(server.port(), "POST", "/v1/completions",
                                     json({{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    if (i == 1) {
      EXPECT_GE(json::parse(r.body)["usage"]["prompt_tokens_details"]["cached_tokens"], 16);
    }
  }
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(5)));
  const std::string m = metrics(server);
  for (const char* name :
       {"pagoda:time_to_first_token_seconds_bucket", "pagoda:inter_token_latency_seconds_count",
        "pagoda:request_time_per_output_token_seconds_sum", "pagoda:e2e_request_latency_seconds_count",
        "pagoda:request_queue_time_seconds_count", "pagoda:request_prefill_time_seconds_count",
        "pagoda:request_decode_time_seconds_count", "pagoda:num_requests_running", "pagoda:num_requests_waiting",
        "pagoda:kv_cache_usage_perc", "pagoda:prefix_cache_queries_total", "pagoda:prefix_cache_hits_total",
        "pagoda:num_preemptions_total", "pagoda:prompt_tokens_total", "pagoda:generation_tokens_total",
        "pagoda:request_success_total", "pagoda:cache_config_info"})
    EXPECT_THAT(m, HasSubstr(name));
  EXPECT_EQ(metric_value(m, "pagoda:e2e_request_latency_seconds_count"), 2.0);
  EXPECT_EQ(metric_value(m, "pagoda:generation_tokens_total"), 16.0);
  EXPECT_EQ(metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}"),
            2.0);
  // Seven tokens between eight: one inter-token sample each.
  EXPECT_EQ(metric_value(m, "pagoda:inter_token_latency_seconds_count"), 14.0);
  EXPECT_GE(metric_value(m, "pagoda:prefix_cache_hits_total").value_or(0), 16.0);
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_usage_perc"), 0.0);
  // One request at a time: seven decode steps each, none of them with prompt tokens.
  EXPECT_EQ(metric_value(m, "pagoda:prefill_tokens_per_decode_step_count"), 14.0);
  EXPECT_EQ(metric_value(m, "pagoda:prefill_tokens_per_decode_step_sum"), 0.0);
  EXPECT_EQ(metric_value(m, "pagoda:prefill_tokens_per_decode_step_bucket{model_name=\"stories260K\",le=\"0\"}"), 14.0);
  EXPECT_THAT(m, HasSubstr("block_size=\"16\""));
  EXPECT_THAT(m, HasSubstr("cache_dtype=\"f16\""));
  EXPECT_THAT(m, HasSubstr("cache_type_k=\"f16\""));
  // stories260K: 5 layers, K and V of 32 f16 values each.
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_bytes_per_token{model_name=\"stories260K\",cache_type_k=\"f16\","
                            "cache_type_v=\"f16\"}"),
            640.0);
  EXPECT_THAT(m, HasSubstr("enable_prefix_caching=\"True\""));
}

TEST(ServerTest, ADisconnectedClientIsCancelledAtOnce) {
  // One sequence at a time, so the 16 x 500 tokens take seconds rather than the tenth of a second a full batch
  // needs on the bundled model: on a loaded machine the client could otherwise be descheduled between its first
  // read and its close for longer than the whole request runs, and nothing would be left to cancel.
  ServerProcess server({"--batch-size", "1"});
  ASSERT_TRUE(server.started()) << server.log();
  const int fd = connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string body =
      R"({"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "ignore_eos": true, "stream": true})";
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  char buf[512];
  ASSERT_GT(recv(fd, buf, sizeof(buf), 0), 0);  // the stream has started
  close(fd);
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(5)));
  const std::string m = metrics(server);
  // Every choice still queued or running when the client went is aborted; at most the first few can have
  // finished by then.
  const double aborted =
      metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"}").value_or(0);
  const double finished =
      metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}")
          .value_or(0);
  EXPECT_EQ(aborted + finished, 16.0) << m;
  EXPECT_GE(aborted, 12.0) << m;
  EXPECT_LT(metric_value(m, "pagoda:generation_tokens_total").value_or(8000), 8000.0);
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_usage_perc"), 0.0);
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})").status,
            200);
}

TEST(ServerTest, AFullQueueIs429AndTheRefusedRequestLeavesNothingBehind) {
  // One running sequence, at most two waiting. A random stories15M-shaped model (a few ms a token): the bundled
  // model writes the first request's tokens in tens of ms, at times before the second request arrives.
  const TempDir tmp_holder;
  const std::string model = write_slow_model(tmp_holder);
  ServerProcess server({"-m", model, "--batch-size", "1", "--max-queue", "2"});
  ASSERT_TRUE(server.started()) << server.log();
  // More choices than the queue can ever hold: 400, not a 429 that no retry could cure.
  const HttpReply never = http_request(server.port(), "POST", "/v1/completions",
                                       R"({"prompt": "Once upon a time", "max_tokens": 3, "n": 3})");
  EXPECT_EQ(never.status, 400) << never.body;
  EXPECT_EQ(json::parse(never.body)["error"]["param"], "n");
  // A long request of two choices takes the running slot and a queue place; a second one of two choices finds one
  // place left (or none): the choice it could queue is withdrawn again.
  std::jthread first([&] {
    const HttpReply r =
        http_request(server.port(), "POST", "/v1/completions",
                     R"({"prompt": "Once upon a time", "max_tokens": 200, "n": 2, "ignore_eos": true})");
    EXPECT_EQ(r.status, 200) << r.body;
  });
  // Until the engine has both of its choices (one running, one waiting).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string m = metrics(server);
    if (metric_value(m, "pagoda:num_requests_running").value_or(0) +
            metric_value(m, "pagoda:num_requests_waiting").value_or(0) >=
        2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const HttpReply r = http_request(server.port(), "POST", "/v1/completions",
                                   R"({"prompt": "Once upon a time", "max_tokens": 200, "n": 2})");
  first.join();
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "rate_limit_error");
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(5)));
  EXPECT_EQ(metric_value(metrics(server), "pagoda:kv_cache_usage_perc"), 0.0);
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})").status,
            200);
}

TEST(ServerTest, ASlowReaderIsCutWithoutSlowingOthers) {
  ServerProcess server({"--max-stream-buffer", "65536", "--log-format", "json"});
  ASSERT_TRUE(server.started()) << server.log();
  // A client that never reads, with a tiny receive buffer: 16 x 500 tokens of SSE with 20 logprobs each (about
  // 20 MB) cannot fit in it, the kernel's send buffer (at most 4 MB) and the 64 KiB the server may queue.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int tiny = 2048;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string body =
      R"({"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "logprobs": 20, "ignore_eos": true, "stream": true})";
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  // Meanwhile another client is served normally.
  const HttpReply other =
      http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 8})");
  EXPECT_EQ(other.status, 200);
  // The slow stream is cut: its 16 choices are cancelled in the engine, and nothing keeps running. The server may
  // read the slow request only after the other one is done (the engine idle in between): wait for the 16 aborts,
  // not for idleness.
  const std::string aborted = "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"}";
  EXPECT_TRUE(wait_for_metrics(server, std::chrono::seconds(20), [&](const std::string& m) {
    return metric_value(m, aborted).value_or(0) >= 16.0;
  })) << metrics(server);
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(20)));
  const std::string m = metrics(server);
  EXPECT_EQ(metric_value(m, aborted), 16.0) << m;
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_usage_perc"), 0.0);
  close(fd);
  // One JSON log line per completion request (--log-format json), the cut one marked as such. The cut request's
  // line is written once its connection is closed: wait for it (up to 5 s), not for a fixed time.
  std::vector<json> completion_lines;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       completion_lines.size() < 2 && std::chrono::steady_clock::now() < deadline;) {
    completion_lines.clear();
    std::istringstream log(server.log());
    for (std::string line; std::getline(log, line);) {
      const json j = json::parse(line, nullptr, false);
      // Every request has its line (the polls of /health and /metrics too); these are the two completions'.
      if (!j.is_discarded() && j.value("event", "") == "request" && j.value("path", "") == "/v1/completions")
        completion_lines.push_back(j);
    }
    if (completion_lines.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(completion_lines.size(), 2u) << server.log();
  for (const json& j : completion_lines)
    EXPECT_TRUE(j.contains("ttft_ms") && j.contains("e2e_ms") && j.contains("prompt_tokens")) << j.dump();
}

TEST(ServerTest, RequestTimeoutEndsStreamsWithAnErrorEventAndBodiesWith408) {
  // 16 choices of 500 tokens take far longer than 50 ms on any CPU.
  ServerProcess server({"--request-timeout", "0.05"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string body =
      R"({"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "ignore_eos": true, "stream": true})";
  const HttpReply streamed = http_request(server.port(), "POST", "/v1/completions", body);
  ASSERT_EQ(streamed.status, 200);
  const std::vector<std::string> events = sse_payloads(streamed.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_THAT(events[events.size() - 2], HasSubstr("request-timeout"));
  const HttpReply whole =
      http_request(server.port(), "POST", "/v1/completions",
                   R"({"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "ignore_eos": true})");
  EXPECT_EQ(whole.status, 408);
  EXPECT_EQ(json::parse(whole.body)["error"]["code"], "request_timeout");
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(5)));
  EXPECT_EQ(metric_value(metrics(server), "pagoda:kv_cache_usage_perc"), 0.0);
}

}  // namespace
}  // namespace pagoda::e2e
