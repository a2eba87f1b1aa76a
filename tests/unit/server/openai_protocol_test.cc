// OpenAI request parsing (defaults, every field's type and range, the error's param) and the response shapes.
#include "server/openai_protocol.h"
#include "server/response_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

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
  c.logprobs = {{"a", -0.5f, {{"a", -0.5f}, {"b", -1.5f}}, 0}, {"b", -0.25f, {{"b", -0.25f}, {"c", -2.0f}}, 1}};
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

TEST(OpenAiProtocolTest, EchoWithMaxTokensZeroAndPromptLogprobsAreRead) {
  const CompletionParams p = parse_ok(R"({"prompt": "x", "echo": true, "logprobs": 1, "max_tokens": 0})");
  EXPECT_TRUE(p.echo && p.echo_only && p.max_tokens_given);
  EXPECT_EQ(p.sampling.max_tokens, 0);
  EXPECT_EQ(p.logprobs, 1);
  EXPECT_EQ(p.prompt_logprobs, -1);
  EXPECT_FALSE(parse_ok(R"({"prompt": "x", "echo": true, "max_tokens": 1})").echo_only);
  // Without echo nothing would come back: 0 stays an error, which says when 0 is allowed.
  const ApiError no_echo = parse_error(R"({"prompt": "x", "max_tokens": 0})");
  EXPECT_EQ(no_echo.param, "max_tokens");
  EXPECT_THAT(no_echo.message, HasSubstr("0 only with 'echo': true"));
  EXPECT_EQ(parse_error(R"({"prompt": "x", "echo": true, "max_tokens": -1})").param, "max_tokens");
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", true).param,
            "max_tokens");

  EXPECT_EQ(parse_ok(R"({"prompt": "x", "prompt_logprobs": 3})").prompt_logprobs, 3);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "prompt_logprobs": 0})").prompt_logprobs, 0);
  EXPECT_EQ(parse_ok(R"({"prompt": "x", "prompt_logprobs": null})").prompt_logprobs, -1);
  EXPECT_EQ(parse_ok(R"({"messages": [{"role": "user", "content": "x"}], "prompt_logprobs": 2})", true).prompt_logprobs,
            2);
  for (const char* bad :
       {R"({"prompt": "x", "prompt_logprobs": 21})", R"({"prompt": "x", "prompt_logprobs": -1})",
        R"({"prompt": "x", "prompt_logprobs": "2"})", R"({"prompt": "x", "prompt_logprobs": 1, "stream": true})"}) {
    const ApiError e = parse_error(bad);
    EXPECT_EQ(e.param, "prompt_logprobs") << bad;
    EXPECT_THAT(e.message, HasSubstr("prompt_logprobs")) << bad;
  }
}

TEST(OpenAiProtocolTest, TextOffsetsCountCodePointsAndAPieceOfACharacterGetsItsOffset) {
  TextOffsetCounter ascii;
  EXPECT_EQ(ascii.next(""), 0);  // BOS: no text
  EXPECT_EQ(ascii.next("Once"), 0);
  EXPECT_EQ(ascii.next(" upon"), 4);
  EXPECT_EQ(ascii.next(" a"), 9);
  // "h\u00e9 \u20ac!": \u00e9 whole in one token (2 bytes, 1 code point), \u20ac in three byte-fallback tokens.
  TextOffsetCounter mixed;
  EXPECT_EQ(mixed.next("h\xc3\xa9"), 0);
  EXPECT_EQ(mixed.next(" "), 2);
  EXPECT_EQ(mixed.next("\xe2"), 3);
  EXPECT_EQ(mixed.next("\x82"), 3);  // inside the character begun at 3
  EXPECT_EQ(mixed.next("\xac"), 3);
  EXPECT_EQ(mixed.next("!"), 4);
  EXPECT_EQ(mixed.next("\xf0\x9f\x98\x80x"), 5);  // an emoji: one code point (two UTF-16 units, four bytes)
  EXPECT_EQ(mixed.next("y"), 7);
}

TEST(OpenAiProtocolTest, PromptLogprobShapes) {
  const ResponseHeader h{"x", 1, "m"};
  ChoiceResult c;
  c.text = "ab";
  // An echoed prompt's first token: null logprob and null alternatives, as OpenAI writes it.
  c.logprobs = {{"a", std::nullopt, {}, 0}, {"b", -0.25f, {{"b", -0.25f}}, 1}};
  c.prompt_logprobs = PromptLogprobs{{}, {{7, -0.25f, 1, "b"}, {9, -2.0f, 2, "c"}}};
  const json comp = json::parse(completion_response(h, {c}, {}, true));
  const json& choice = comp["choices"][0];
  EXPECT_EQ(choice["logprobs"]["token_logprobs"], json::parse("[null, -0.25]"));
  EXPECT_EQ(choice["logprobs"]["top_logprobs"][0], nullptr);
  EXPECT_EQ(choice["logprobs"]["top_logprobs"][1], json::parse(R"({"b": -0.25})"));
  EXPECT_EQ(choice["logprobs"]["text_offset"], json({0, 1}));
  // vLLM's shape: per choice on completions, once per response on chat.
  EXPECT_EQ(choice["prompt_logprobs"], json::parse(R"([null, {"7": {"logprob": -0.25, "rank": 1, "decoded_token": "b"},
                                   "9": {"logprob": -2.0, "rank": 2, "decoded_token": "c"}}])"));
  ChoiceResult chat_choice;
  chat_choice.text = "ok";
  chat_choice.prompt_logprobs = c.prompt_logprobs;
  const json chat = json::parse(chat_response(h, {chat_choice}, {}, false));
  EXPECT_EQ(chat["prompt_logprobs"], choice["prompt_logprobs"]);
  EXPECT_FALSE(chat["choices"][0].contains("prompt_logprobs"));
  // Not asked for: no field at all.
  EXPECT_FALSE(
      json::parse(completion_response(h, {ChoiceResult{}}, {}, false))["choices"][0].contains("prompt_logprobs"));
  EXPECT_FALSE(json::parse(chat_response(h, {ChoiceResult{}}, {}, false)).contains("prompt_logprobs"));
}

TEST(OpenAiProtocolTest, InvalidUtf8InTokensIsReplacedNotThrown) {
  ChoiceResult c;
  c.text = std::string("\xe2\x82", 2);  // a partial character
  const std::string out = completion_response({"x", 1, "m"}, {c}, {}, false);
  EXPECT_FALSE(json::parse(out, nullptr, false).is_discarded());
}

TEST(OpenAiProtocolTest, ResponseIdsAreUniquePerGeneratorAndKeepTheirPrefixes) {
  IdGenerator ids;
  const std::string a = ids.next(response_id_prefix(false)), b = ids.next(response_id_prefix(false));
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 5u + 24u);
  EXPECT_EQ(ids.next(response_id_prefix(true)).rfind("chatcmpl-", 0), 0u);
  // No state outside the generator: two with one salt give the same sequence.
  IdGenerator x(7), y(7);
  EXPECT_EQ(x.next("msg_"), y.next("msg_"));
  EXPECT_EQ(x.next("msg_"), y.next("msg_"));
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(x.next("")).second);
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
  for (const char* field : {"suffix", "truncate_prompt_tokens", "include_stop_str_in_output"})
    EXPECT_EQ(error_of(std::string(R"({"prompt": "x", ")") + field + R"(": {}})", false).param, field);
  for (const char* field : {"audio", "web_search_options"})
    EXPECT_EQ(error_of(std::string(R"({"messages": [{"role": "user", "content": "x"}], ")") + field + R"(": []})", true)
                  .param,
              field);
  // A field of the other endpoint.
  EXPECT_EQ(error_of(R"({"prompt": "x", "max_completion_tokens": 3})", false).param, "max_completion_tokens");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", true).param, "echo");
  // Accepted only with the value that changes nothing.
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(error_of(chat + R"("response_format": {"type": "bogus"}})", true).param, "response_format.type");
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

TEST(StrictRequestTest, ChatTemplateKwargsReachTheTemplateInOrderButNotTheServersOwnValues) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  CompletionParams p;
  ASSERT_FALSE(parse_completion_params(
                   chat + R"("chat_template_kwargs": {"enable_thinking": false, "a": {"z": 1, "b": 2}}})", true, &p)
                   .has_value());
  EXPECT_EQ(p.chat_template_kwargs.dump(), R"({"enable_thinking":false,"a":{"z":1,"b":2}})");
  EXPECT_EQ(error_of(chat + R"("chat_template_kwargs": [1]})", true).param, "chat_template_kwargs");
  EXPECT_EQ(error_of(chat + R"("chat_template_kwargs": {"tools": []}})", true).param, "chat_template_kwargs.tools");
  EXPECT_EQ(error_of(chat + R"("chat_template_kwargs": {"messages": []}})", true).param,
            "chat_template_kwargs.messages");
  EXPECT_EQ(error_of(R"({"prompt": "x", "chat_template_kwargs": {}})", false).param, "chat_template_kwargs");
}

TEST(StrictRequestTest, ReasoningEffortAndReasoningFormatAreReadForChat) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  CompletionParams p;
  ASSERT_FALSE(
      parse_completion_params(chat + R"("reasoning_effort": "high", "reasoning_format": "none"})", true, &p)
          .has_value());
  EXPECT_EQ(p.reasoning_effort, "high");
  EXPECT_EQ(p.reasoning_format, ReasoningFormat::kNone);
  EXPECT_EQ(error_of(chat + R"("reasoning_effort": "extreme"})", true).param, "reasoning_effort");
  EXPECT_EQ(error_of(chat + R"("reasoning_effort": 3})", true).param, "reasoning_effort");
  EXPECT_EQ(error_of(chat + R"("reasoning_format": "deepseek-legacy"})", true).param, "reasoning_format");
  EXPECT_EQ(error_of(R"({"prompt": "x", "reasoning_effort": "low"})", false).param, "reasoning_effort");
  // An assistant's reasoning given back reaches the template; on another role it is refused by name.
  ASSERT_FALSE(parse_completion_params(
                   R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y",
                       "reasoning_content": "hm"}, {"role": "user", "content": "z"}]})",
                   true, &p)
                   .has_value());
  EXPECT_EQ(p.messages[1].reasoning_content, "hm");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x", "reasoning_content": "hm"}]})", true).param,
            "messages[0].reasoning_content");
}

TEST(OpenAiProtocolTest, ReasoningGoesOutAsReasoningContentAndItsTokensInTheUsage) {
  const ResponseHeader h{"chatcmpl-1", 1, "m"};
  ChoiceResult c;
  c.text = "Hi.";
  c.reasoning = "A greeting.";
  c.finish_reason = FinishReason::kStop;
  const json whole = json::parse(chat_response(h, {c}, UsageFigures{3, 9, 0, 4}, false));
  EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], "A greeting.");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hi.");
  EXPECT_EQ(whole["usage"]["completion_tokens_details"]["reasoning_tokens"], 4);
  // No reasoning: no field, as before.
  const json plain = json::parse(chat_response(h, {ChoiceResult{}}, UsageFigures{}, false));
  EXPECT_FALSE(plain["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_FALSE(plain["usage"].contains("completion_tokens_details"));
  ChoiceResult piece;
  piece.reasoning = "A gre";
  const json chunk = json::parse(chat_chunk(h, piece, false, false, std::nullopt));
  EXPECT_EQ(chunk["choices"][0]["delta"], json({{"reasoning_content", "A gre"}}));
}

TEST(StructuredOutputParamsTest, EachConstraintSpelling) {
  using Kind = grammar::GrammarSpec::Kind;
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  CompletionParams p = parse_ok(chat + R"("response_format": {"type": "json_object"}})", true);
  ASSERT_TRUE(p.constraint);
  EXPECT_EQ(p.constraint->spec.kind, Kind::kJsonObject);
  p = parse_ok(chat + R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}})",
               true);
  ASSERT_TRUE(p.constraint);
  EXPECT_EQ(p.constraint->spec.kind, Kind::kJsonSchema);
  EXPECT_EQ(p.constraint->param, "response_format.json_schema.schema");
  EXPECT_EQ(json::parse(p.constraint->spec.text)["properties"]["a"]["type"], "integer");
  EXPECT_FALSE(parse_ok(chat + R"("response_format": {"type": "text"}})", true).constraint);
  p = parse_ok(R"({"prompt": "x", "guided_json": "{\"type\": \"string\"}"})");
  ASSERT_TRUE(p.constraint);
  EXPECT_EQ(p.constraint->spec.kind, Kind::kJsonSchema);
  EXPECT_EQ(p.constraint->spec.text, R"({"type": "string"})");
  p = parse_ok(R"({"prompt": "x", "guided_regex": "[0-9]+"})");
  EXPECT_EQ(p.constraint->spec.kind, Kind::kRegex);
  EXPECT_EQ(p.constraint->param, "guided_regex");
  p = parse_ok(R"({"prompt": "x", "guided_choice": ["a", "b"]})");
  EXPECT_EQ(p.constraint->spec.kind, Kind::kChoice);
  EXPECT_EQ(p.constraint->spec.choices, (std::vector<std::string>{"a", "b"}));
  p = parse_ok(R"({"prompt": "x", "guided_grammar": "root ::= \"a\""})");
  EXPECT_EQ(p.constraint->spec.kind, Kind::kGbnf);
  p = parse_ok(R"({"prompt": "x", "grammar": "root ::= \"a\""})");
  EXPECT_EQ(p.constraint->spec.kind, Kind::kGbnf);
  p = parse_ok(R"({"prompt": "x", "structured_outputs": {"choice": ["yes", "no"]}})");
  EXPECT_EQ(p.constraint->spec.kind, Kind::kChoice);
  EXPECT_EQ(p.constraint->param, "structured_outputs.choice");
  p = parse_ok(chat + R"("structured_outputs": {"json": {"type": "array"}}})", true);
  EXPECT_EQ(p.constraint->spec.kind, Kind::kJsonSchema);
}

TEST(StructuredOutputParamsTest, BadConstraintsAre400sNamingTheField) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(parse_error(chat + R"("response_format": {"type": "json_schema"}})", true).param,
            "response_format.json_schema");
  EXPECT_EQ(
      parse_error(chat + R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})", true).param,
      "response_format.json_schema.schema");
  EXPECT_EQ(parse_error(chat + R"("response_format": {"type": "json_schema", "json_schema": {"schema": {},
      "extra": 1}}})",
                        true)
                .param,
            "response_format.json_schema.extra");
  EXPECT_EQ(parse_error(chat + R"("response_format": {"type": "json_object", "schema": {}}})", true).param,
            "response_format.schema");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "guided_json": 3})").param, "guided_json");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "guided_json": "{not json"})").param, "guided_json");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "guided_choice": []})").param, "guided_choice");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "guided_choice": ["a", 1]})").param, "guided_choice");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "guided_regex": ""})").param, "guided_regex");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "structured_outputs": {"whitespace_pattern": " "}})").param,
            "structured_outputs.whitespace_pattern");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "structured_outputs": {}})").param, "structured_outputs");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "structured_outputs": {"regex": "a", "choice": ["b"]}})").param,
            "structured_outputs.choice");
  // Two constraints at once.
  const ApiError two = parse_error(chat + R"("response_format": {"type": "json_object"}, "guided_regex": "a"})", true);
  EXPECT_THAT(two.message, HasSubstr("one output constraint"));
  // response_format is a chat field.
  EXPECT_EQ(parse_error(R"({"prompt": "x", "response_format": {"type": "json_object"}})").param, "response_format");
}

TEST(StructuredOutputParamsTest, LogitBiasMinTokensStopTokenIds) {
  CompletionParams p = parse_ok(
      R"({"prompt": "x", "max_tokens": 9, "logit_bias": {"5": -100, "12": 2.5}, "min_tokens": 3,
          "stop_token_ids": [2, 7]})");
  std::vector<std::pair<TokenId, float>> bias = p.sampling.logit_bias;
  std::sort(bias.begin(), bias.end());
  EXPECT_EQ(bias, (std::vector<std::pair<TokenId, float>>{{5, -100.0f}, {12, 2.5f}}));
  EXPECT_EQ(p.sampling.min_tokens, 3);
  EXPECT_EQ(p.sampling.stop_token_ids, (std::vector<TokenId>{2, 7}));
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logit_bias": {"a": 1}})").param, "logit_bias");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logit_bias": {"-1": 1}})").param, "logit_bias");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logit_bias": {"1": 101}})").param, "logit_bias");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logit_bias": {"1": "1"}})").param, "logit_bias");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logit_bias": [1]})").param, "logit_bias");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "min_tokens": -1})").param, "min_tokens");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "stop_token_ids": [1, "a"]})").param, "stop_token_ids");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "stop_token_ids": 3})").param, "stop_token_ids");
}

TEST(ToolParamsTest, ToolsChoicesAndToolMessages) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}},
      {"type": "function", "function": {"name": "noop"}}])";
  CompletionParams p = parse_ok(chat + tools + "}", true);
  ASSERT_EQ(p.tools.tools.size(), 2u);
  EXPECT_EQ(p.tools.choice, ToolChoice::kAuto);
  EXPECT_EQ(p.tools.tools[0].name, "get_weather");
  EXPECT_EQ(p.tools.tools[0].parameters["properties"]["city"]["type"], "string");
  EXPECT_EQ(p.tools.tools[1].parameters["type"], "object");
  EXPECT_TRUE(p.tools.parallel_tool_calls);
  p = parse_ok(chat + tools + R"(, "tool_choice": "required", "parallel_tool_calls": false})", true);
  EXPECT_EQ(p.tools.choice, ToolChoice::kRequired);
  EXPECT_FALSE(p.tools.parallel_tool_calls);
  p = parse_ok(chat + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "noop"}}})", true);
  EXPECT_EQ(p.tools.choice, ToolChoice::kNamed);
  EXPECT_EQ(p.tools.named, "noop");
  EXPECT_FALSE(parse_ok(chat + tools + R"(, "tool_choice": "none"})", true).tools.active());
  EXPECT_FALSE(parse_ok(chat + R"("tool_choice": "none"})", true).tools.active());
  // Errors name the field.
  EXPECT_EQ(parse_error(chat + R"("tool_choice": "auto"})", true).param, "tool_choice");
  EXPECT_EQ(
      parse_error(chat + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})", true).param,
      "tool_choice");
  EXPECT_EQ(parse_error(chat + tools + R"(, "tool_choice": "sometimes"})", true).param, "tool_choice");
  EXPECT_EQ(parse_error(chat + R"("tools": [{"type": "function", "function": {"name": "a b"}}]})", true).param,
            "tools[0].function.name");
  EXPECT_EQ(parse_error(chat + R"("tools": [{"type": "retrieval"}]})", true).param, "tools[0].type");
  EXPECT_EQ(
      parse_error(chat + R"("tools": [{"type": "function", "function": {"name": "a", "parameters": 3}}]})", true).param,
      "tools[0].function.parameters");
  EXPECT_EQ(parse_error(chat + R"("tools": [{"type": "function", "function": {"name": "a"}},
      {"type": "function", "function": {"name": "a"}}]})",
                        true)
                .param,
            "tools[1]");
  EXPECT_EQ(
      parse_error(chat + tools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"}})", true)
          .param,
      "tool_choice");
  EXPECT_EQ(parse_error(chat + R"("function_call": "auto"})", true).param, "function_call");
  // An assistant's calls and a tool's result, as clients send them back.
  p = parse_ok(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "refusal": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "rain"}]})",
               true);
  ASSERT_EQ(p.messages.size(), 3u);
  ASSERT_EQ(p.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(p.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(p.messages[1].tool_calls[0].arguments, R"({"city": "Oslo"})");
  EXPECT_EQ(p.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(p.messages[2].name, "get_weather");
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
      "arguments": {}}}]}]})",
                        true)
                .param,
            "messages[0].tool_calls[0]");
}

TEST(ToolParamsTest, TheLegacyFunctionsApiMapsOntoToolsAndAnswersAsFunctionCall) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  const std::string fns = R"("functions": [{"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}])";
  CompletionParams p;
  ASSERT_FALSE(parse_completion_params(chat + fns + "}", true, &p).has_value());
  EXPECT_TRUE(p.tools.legacy_functions);
  EXPECT_EQ(p.tools.choice, ToolChoice::kAuto);
  EXPECT_FALSE(p.tools.parallel_tool_calls);
  ASSERT_EQ(p.tools.tools.size(), 1u);
  EXPECT_EQ(p.tools.tools[0].name, "get_weather");
  ASSERT_FALSE(parse_completion_params(chat + fns + R"(, "function_call": {"name": "get_weather"}})", true, &p));
  EXPECT_EQ(p.tools.choice, ToolChoice::kNamed);
  ASSERT_FALSE(parse_completion_params(chat + fns + R"(, "function_call": "none"})", true, &p));
  EXPECT_EQ(p.tools.choice, ToolChoice::kNone);
  // Errors name the legacy fields.
  EXPECT_EQ(error_of(chat + fns + R"(, "function_call": {"name": "nope"}})", true).param, "function_call");
  EXPECT_EQ(error_of(chat + R"("function_call": "auto"})", true).param, "function_call");
  EXPECT_EQ(error_of(chat + R"("functions": [{"name": ""}]})", true).param, "functions[0].name");
  EXPECT_EQ(error_of(chat + fns + R"(, "tools": []})", true).param, "functions");
  EXPECT_EQ(error_of(chat + fns + R"(, "tool_choice": "auto"})", true).param, "tool_choice");
  // The conversation's legacy turns: an assistant's function_call and a function role's result.
  ASSERT_FALSE(parse_completion_params(
      R"({"messages": [{"role": "user", "content": "x"},
                       {"role": "assistant", "content": null, "function_call": {"name": "get_weather",
                        "arguments": "{\"city\": \"Paris\"}"}},
                       {"role": "function", "name": "get_weather", "content": "21C"}], )" +
          fns + "}",
      true, &p));
  ASSERT_EQ(p.messages.size(), 3u);
  ASSERT_EQ(p.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(p.messages[1].tool_calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(p.messages[2].role, "tool");
  EXPECT_EQ(p.messages[2].name, "get_weather");
  // The answer: message.function_call and finish_reason "function_call"; streamed as delta.function_call pieces.
  ChoiceResult c;
  c.tool_calls.push_back({"call_1", "get_weather", R"({"city":"Oslo"})"});
  c.called_tools = true;
  c.finish_reason = FinishReason::kStop;
  const nlohmann::json whole = nlohmann::json::parse(chat_response({"id", 1, "m"}, {c}, {}, false, true));
  EXPECT_EQ(whole["choices"][0]["message"]["function_call"]["name"], "get_weather");
  EXPECT_EQ(whole["choices"][0]["message"]["function_call"]["arguments"], R"({"city":"Oslo"})");
  EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "function_call");
  ChoiceResult first;
  first.tool_call_deltas.push_back({0, "call_1", "get_weather", R"({"ci)"});
  ChoiceResult next;
  next.tool_call_deltas.push_back({0, "", "", R"(ty":"Oslo"})"});
  next.called_tools = true;
  next.finish_reason = FinishReason::kStop;
  const nlohmann::json a = nlohmann::json::parse(chat_chunk({"id", 1, "m"}, first, true, false, std::nullopt, true));
  const nlohmann::json b = nlohmann::json::parse(chat_chunk({"id", 1, "m"}, next, false, false, std::nullopt, true));
  EXPECT_EQ(a["choices"][0]["delta"]["function_call"],
            nlohmann::json::parse(R"({"name":"get_weather","arguments":"{\"ci"})"));
  EXPECT_EQ(b["choices"][0]["delta"]["function_call"], nlohmann::json::parse(R"({"arguments":"ty\":\"Oslo\"}"})"));
  EXPECT_EQ(b["choices"][0]["finish_reason"], "function_call");
}

TEST(ToolParamsTest, ResponsesCarryToolCallsAsOpenAiSendsThem) {
  ResponseHeader h{"chatcmpl-1", 1, "m"};
  ChoiceResult c;
  c.finish_reason = FinishReason::kStop;
  c.called_tools = true;
  c.tool_calls.push_back({"call_a", "f", R"({"x":1})"});
  const json whole = json::parse(chat_response(h, {c}, UsageFigures{}, false));
  const json& msg = whole["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(msg["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["arguments"], R"({"x":1})");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  // Streamed: the first piece of a call has its id, type and name; later pieces only arguments.
  ChoiceResult first;
  first.tool_call_deltas.push_back({0, "call_a", "f", ""});
  const json c1 = json::parse(chat_chunk(h, first, true, false, std::nullopt));
  const json& d1 = c1["choices"][0]["delta"];
  EXPECT_EQ(d1["role"], "assistant");
  EXPECT_TRUE(d1["content"].is_null());
  EXPECT_EQ(
      d1["tool_calls"][0],
      json({{"index", 0}, {"id", "call_a"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", ""}}}}));
  ChoiceResult more;
  more.tool_call_deltas.push_back({0, "", "", "{\"x\""});
  more.finish_reason = FinishReason::kStop;
  more.called_tools = true;
  const json c2 = json::parse(chat_chunk(h, more, false, false, std::nullopt));
  EXPECT_EQ(c2["choices"][0]["delta"]["tool_calls"][0], json({{"index", 0}, {"function", {{"arguments", "{\"x\""}}}}));
  EXPECT_FALSE(c2["choices"][0]["delta"].contains("content"));
  EXPECT_EQ(c2["choices"][0]["finish_reason"], "tool_calls");
}

}  // namespace
}  // namespace pagoda::server
