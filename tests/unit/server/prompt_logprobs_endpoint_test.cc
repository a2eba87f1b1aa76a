// Prompt logprobs through the whole API path in this process (the sanitizer trees run it too): an echo scored
// with max_tokens 0, streamed and not, with n choices; vLLM's prompt_logprobs; and a server whose engine computes
// none says so, with its reason, in a 400 naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "in_process_server.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using raw_http::http_request;
using raw_http::HttpReply;
using ::testing::HasSubstr;

TEST(PromptLogprobsEndpointTest, EchoScoresThePromptStreamedAndNotForEveryChoice) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const std::vector<TokenId> ids = server.tokenizer().encode("Once upon a time", true);
  const json body = {{"prompt", "Once upon a time"}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}, {"n", 2}};
  const HttpReply whole = http_request(server.port(), "POST", "/v1/completions", body.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json r = json::parse(whole.body);
  ASSERT_EQ(r["choices"].size(), 2u);
  for (const json& c : r["choices"]) {
    EXPECT_EQ(c["text"], "Once upon a time");
    EXPECT_EQ(c["finish_reason"], "length");
    ASSERT_EQ(c["logprobs"]["tokens"].size(), ids.size());
    EXPECT_TRUE(c["logprobs"]["token_logprobs"][0].is_null());
    EXPECT_EQ(c["logprobs"]["token_logprobs"], r["choices"][0]["logprobs"]["token_logprobs"]);
  }
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);

  json streamed = body;
  streamed["stream"] = true;
  const HttpReply s = http_request(server.port(), "POST", "/v1/completions", streamed.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  std::vector<std::string> events = raw_http::sse_payloads(s.body);
  ASSERT_EQ(events.size(), 3u) << s.body;  // one chunk per choice (prompt, logprobs and finish), then [DONE]
  for (size_t i = 0; i < 2; ++i) {
    const json c = json::parse(events[i])["choices"][0];
    EXPECT_EQ(c["text"], "Once upon a time");
    EXPECT_EQ(c["finish_reason"], "length");
    EXPECT_EQ(c["logprobs"]["tokens"], r["choices"][0]["logprobs"]["tokens"]);
    EXPECT_EQ(c["logprobs"]["text_offset"], r["choices"][0]["logprobs"]["text_offset"]);
  }

  const HttpReply v = http_request(server.port(), "POST", "/v1/completions",
                                   json{{"prompt", ids}, {"prompt_logprobs", 1}, {"max_tokens", 1}}.dump());
  ASSERT_EQ(v.status, 200) << v.body;
  const json plp = json::parse(v.body)["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(plp.size(), ids.size());
  EXPECT_TRUE(plp[0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_TRUE(plp[i].contains(std::to_string(ids[i]))) << plp[i].dump();
}

TEST(PromptLogprobsEndpointTest, AServerWithoutPromptLogitsRefusesNamingTheFieldAndWhy) {
  ApiServerOptions api;
  api.prompt_logprobs_off = "the model runs over --tp/--pp ranks";
  InProcessServer server({}, api, /*prompt_logits=*/false);
  ASSERT_TRUE(server.started());
  const HttpReply echo = http_request(server.port(), "POST", "/v1/completions",
                                      R"({"prompt": "Once", "echo": true, "logprobs": 1, "max_tokens": 0})");
  EXPECT_EQ(echo.status, 400);
  const json e = json::parse(echo.body)["error"];
  EXPECT_EQ(e["param"], "echo");
  EXPECT_THAT(e["message"].get<std::string>(), HasSubstr("--tp/--pp"));
  const HttpReply chat =
      http_request(server.port(), "POST", "/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "Hi"}], "prompt_logprobs": 0, "max_tokens": 1})");
  EXPECT_EQ(chat.status, 400);
  EXPECT_EQ(json::parse(chat.body)["error"]["param"], "prompt_logprobs");
  // An echo without logprobs needs no scores.
  EXPECT_EQ(
      http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "echo": true, "max_tokens": 1})")
          .status,
      200);
}

}  // namespace
}  // namespace pagoda::server
