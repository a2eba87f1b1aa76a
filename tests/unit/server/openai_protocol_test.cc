// OpenAI request parsing (defaults, every field's type and range, the error's param) and the response shapes.
#include "server/openai_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

CompletionParams parse_ok(const std::string& body, bool chat = false) {
  CompletionParams p;
  std::optional<ApiError> e = parse_completion_params(body, chat, &p);
  EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->message : "");
  return p;
}

ApiError parse_error(const std::string& body, bool chat = false) {
  CompletionParams p;
  std::optional<ApiError> e = parse_completion_params(body, chat, &p);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(OpenAiProtocolTest, CompletionDefaultsAreOpenAis) {
  const CompletionParams p = parse_ok(R"({"prompt": "hi"})");
  ASSERT_EQ(p.prompts.size(), 1u);
  EXPECT_EQ(*p.prompts[0].text, "hi");
  EXPECT_FALSE(p.max_tokens_given);
  EXPECT_EQ(p.sampling.temperature, 1.0f);
  EXPECT_EQ(p.sampling.top_p, 1.0f);
  EXPECT_EQ(p.n, 1);
  EXPECT_FALSE(p.stream);
  EXPECT_EQ(p.logprobs, -1);
  EXPECT_FALSE(p.model.has_value());
}

TEST(OpenAiProtocolTest, EveryFieldIsRead) {
  const CompletionParams p = parse_ok(R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5,
      "top_p": 0.9, "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "seed": 42, "stop": ["a", "b"], "n": 3, "stream": true,
      "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "logprobs": 2, "echo": true,
      "user": "ignored", "best_of": 3})");
  EXPECT_EQ(*p.model, "m");
  EXPECT_TRUE(p.max_tokens_given);
  EXPECT_EQ(p.sampling.max_tokens, 7);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.9f);
  EXPECT_EQ(p.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.sampling.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(p.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(*p.sampling.seed, 42u);
  EXPECT_EQ(p.sampling.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.n, 3);
  EXPECT_TRUE(p.stream && p.include_usage && p.continuous_usage);
  EXPECT_EQ(p.logprobs, 2);
  EXPECT_TRUE(p.echo);
}

TEST(OpenAiProtocolTest, PromptShapes) {
  EXPECT_EQ(parse_ok(R"({"prompt": [1, 2, 3]})").prompts[0].tokens, (std::vector<TokenId>{1, 2, 3}));
  const CompletionParams many = parse_ok(R"({"prompt": ["a", "b", [4, 5]]})");
  ASSERT_EQ(many.prompts.size(), 3u);
  EXPECT_EQ(*many.prompts[1].text, "b");
  EXPECT_EQ(many.prompts[2].tokens, (std::vector<TokenId>{4, 5}));
  EXPECT_EQ(parse_error(R"({"prompt": []})").param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": [1, "x"]})").param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": [-1]})").param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": {"a": 1}})").param, "prompt");
}

TEST(OpenAiProtocolTest, ChatMessagesAndTheirContentParts) {
  const CompletionParams p = parse_ok(R"({"messages": [{"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}]},
      {"role": "assistant", "content": null}], "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2})",
                                      true);
  ASSERT_EQ(p.messages.size(), 3u);
  EXPECT_EQ(p.messages[1].content, "hello");
  EXPECT_EQ(p.messages[2].content, "");
  EXPECT_EQ(p.sampling.max_tokens, 9);
  EXPECT_EQ(p.logprobs, 2);
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true).param,
            "messages[0].content");
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "user"}]})", true).param, "messages[0].content");
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true).param,
            "top_logprobs");
}

TEST(OpenAiProtocolTest, InvalidFieldsNameThemselves) {
  struct Case {
    const char* body;
    const char* param;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
           {R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
           {R"({"prompt": "x", "max_tokens": "5"})", "max_tokens"},
           {R"({"prompt": "x", "temperature": 2.5})", "temperature"},
           {R"({"prompt": "x", "temperature": "hot"})", "temperature"},
           {R"({"prompt": "x", "top_p": 0})", "top_p"},
           {R"({"prompt": "x", "top_p": 1.5})", "top_p"},
           {R"({"prompt": "x", "min_p": -0.1})", "min_p"},
           {R"({"prompt": "x", "top_k": -2})", "top_k"},
           {R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty"},
           {R"({"prompt": "x", "frequency_penalty": -3})", "frequency_penalty"},
           {R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
           {R"({"prompt": "x", "n": 0})", "n"},
           {R"({"prompt": "x", "n": 17})", "n"},
           {R"({"prompt": "x", "seed": "s"})", "seed"},
           {R"({"prompt": "x", "stop": 5})", "stop"},
           {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
           {R"({"prompt": "x", "stream": 1})", "stream"},
           {R"({"prompt": "x", "stream_options": {}})", "stream_options"},
           {R"({"prompt": "x", "model": 3})", "model"},
       }) {
    const ApiError e = parse_error(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_THAT(e.message, HasSubstr(c.param)) << c.body;
  }
  EXPECT_THAT(parse_error("{oops").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(parse_error("[]").message, HasSubstr("JSON object"));
}

TEST(OpenAiProtocolTest, TopKMinusOneIsOffAndEmptyStopsAreDropped) {
  const CompletionParams p = parse_ok(R"({"prompt": "x", "top_k": -1, "stop": ["", "end"]})");
  EXPECT_EQ(p.sampling.top_k, 0);
  EXPECT_EQ(p.sampling.stop, (std::vector<std::string>{"end"}));
}

TEST(OpenAiProtocolTest, ResponseShapes) {
  const ResponseHeader h{"cmpl-1", 1700000000, "m"};
  ChoiceResult c;
  c.index = 0;
  c.text = "hello";
  c.finish_reason = FinishReason::kStop;
  const UsageFigures u{5, 3, 2};
  const json whole = json::parse(completion_response(h, {c}, u, false));
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["id"], "cmpl-1");
  EXPECT_EQ(whole["created"], 1700000000);
  EXPECT_EQ(whole["choices"][0]["text"], "hello");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(whole["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(whole["usage"]["total_tokens"], 8);
  EXPECT_EQ(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 2);

  const json chat = json::parse(chat_response(h, {c}, u, false));
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(chat["choices"][0]["message"]["content"], "hello");

  ChoiceResult streaming;
  streaming.text = "he";
  const json first = json::parse(chat_chunk(h, streaming, true, false, std::nullopt));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "he");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  const json with_usage = json::parse(completion_chunk(h, streaming, false, u));
  EXPECT_EQ(with_usage["usage"]["completion_tokens"], 3);
  const json last = json::parse(usage_chunk(h, true, u));
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
}

TEST(OpenAiProtocolTest, LogprobsShapes) {
  const ResponseHeader h{"x", 1, "m"};
  ChoiceResult c;
  c.text = "ab";
  c.logprobs = {{"a", -0.5f, {{"a", -0.5f}, {"b", -1.5f}}}, {"b", -0.25f, {{"b", -0.25f}, {"c", -2.0f}}}};
  const json comp = json::parse(completion_response(h, {c}, {}, true));
  const json& lp = comp["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"a", "b"}));
  EXPECT_EQ(lp["token_logprobs"][1], -0.25);
  EXPECT_EQ(lp["top_logprobs"][0]["b"], -1.5);
  EXPECT_EQ(lp["text_offset"], json({0, 1}));
  const json chat = json::parse(chat_response(h, {c}, {}, true));
  const json& content = chat["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(content[0]["token"], "a");
  EXPECT_EQ(content[0]["bytes"], json({97}));
  EXPECT_EQ(content[1]["top_logprobs"][1]["token"], "c");
}

TEST(OpenAiProtocolTest, InvalidUtf8InTokensIsReplacedNotThrown) {
  ChoiceResult c;
  c.text = std::string("\xe2\x82", 2);  // a partial character
  const std::string out = completion_response({"x", 1, "m"}, {c}, {}, false);
  EXPECT_FALSE(json::parse(out, nullptr, false).is_discarded());
}

TEST(OpenAiProtocolTest, ResponseIdsAreUnique) {
  const std::string a = new_response_id(false), b = new_response_id(false);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(new_response_id(true).rfind("chatcmpl-", 0), 0u);
}

TEST(OpenAiProtocolTest, RandomBodiesNeverThrow) {
  std::mt19937 rng(7);
  const std::string valid = R"({"prompt": ["a", [1, 2]], "max_tokens": 3, "stop": ["x"], "logprobs": 1})";
  for (int i = 0; i < 20000; ++i) {
    std::string body = valid;
    for (int k = 0; k < 1 + int(rng() % 4); ++k) {
      const size_t pos = rng() % body.size();
      if (rng() % 2) {
        body[pos] = char(rng() % 256);
      } else {
        body.resize(pos);
        if (body.empty()) body = "{";
      }
    }
    CompletionParams p;
    (void)parse_completion_params(body, i % 2 == 1, &p);
  }
}

}  // namespace
}  // namespace pagoda::server

namespace pagoda::server {
namespace {

TEST(ParseJsonObjectTest, DeepNestingIsRefusedBeforeTheParse) {
  nlohmann::json out;
  const std::string deep = "{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";  // 65 levels
  ASSERT_TRUE(parse_json_object(deep, &out).has_value());
  EXPECT_NE(parse_json_object(deep, &out)->message.find("deeper than 64"), std::string::npos);
  const std::string ok = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";  // 64 levels
  EXPECT_FALSE(parse_json_object(ok, &out).has_value());
  // Brackets inside strings (escaped quotes too) are text, not nesting.
  const std::string text = "{\"a\":\"\\\"" + std::string(1000, '[') + "\"}";
  EXPECT_FALSE(parse_json_object(text, &out).has_value());
  EXPECT_EQ(out["a"].get<std::string>().size(), 1001u);
  EXPECT_TRUE(parse_json_object(std::string(8 << 20, '['), &out).has_value());
  EXPECT_TRUE(parse_json_object("[1]", &out).has_value());  // not an object
}

}  // namespace
}  // namespace pagoda::server

namespace pagoda::server {
namespace {

ApiError error_of(const std::string& body, bool chat) {
  CompletionParams p;
  std::optional<ApiError> e = parse_completion_params(body, chat, &p);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(StrictRequestTest, UnknownAndUnimplementedFieldsAre400sNamingThem) {
  // A misspelling: named, with the field it most likely meant.
  ApiError e = error_of(R"({"prompt": "x", "max_token": 5})", false);
  EXPECT_EQ(e.param, "max_token");
  EXPECT_THAT(e.message, HasSubstr("Unrecognized request argument supplied: max_token"));
  EXPECT_THAT(e.message, HasSubstr("did you mean 'max_tokens'?"));
  EXPECT_EQ(error_of(R"({"prompt": "x", "frobnicate": 1})", false).param, "frobnicate");
  // Known fields this server does not implement.
  for (const char* field : {"logit_bias", "suffix", "min_tokens", "stop_token_ids", "guided_json", "grammar"})
    EXPECT_EQ(error_of(std::string(R"({"prompt": "x", ")") + field + R"(": {}})", false).param, field);
  for (const char* field : {"tools", "functions", "logit_bias", "parallel_tool_calls", "reasoning_effort"})
    EXPECT_EQ(error_of(std::string(R"({"messages": [{"role": "user", "content": "x"}], ")") + field + R"(": []})", true)
                  .param,
              field);
  // A field of the other endpoint.
  EXPECT_EQ(error_of(R"({"prompt": "x", "max_completion_tokens": 3})", false).param, "max_completion_tokens");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", true).param, "echo");
  // Accepted only with the value that changes nothing.
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(error_of(chat + R"("response_format": {"type": "json_object"}})", true).param, "response_format");
  EXPECT_EQ(error_of(chat + R"("response_format": {"type": "bogus"}})", true).param, "response_format");
  EXPECT_EQ(error_of(chat + R"("tool_choice": "auto"})", true).param, "tool_choice");
  EXPECT_EQ(error_of(chat + R"("modalities": ["text", "audio"]})", true).param, "modalities");
  EXPECT_EQ(error_of(R"({"prompt": "x", "n": 2, "best_of": 4})", false).param, "best_of");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stream": true, "stream_options": {"chunk_size": 4}})", false).param,
            "stream_options.chunk_size");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x", "name": "bob"}]})", true).param,
            "messages[0].name");
  CompletionParams p;
  for (const std::string& ok : std::vector<std::string>{
           chat + R"("response_format": {"type": "text"}, "tool_choice": "none", "modalities": ["text"]})",
           chat + R"("user": "u", "metadata": {"k": "v"}, "store": false, "service_tier": "auto"})"})
    EXPECT_FALSE(parse_completion_params(ok, true, &p).has_value()) << ok;
}

}  // namespace
}  // namespace pagoda::server
