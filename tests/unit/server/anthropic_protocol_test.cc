// Anthropic's Messages API: parsing (system, text blocks, required max_tokens, ranges, stop_sequences, what is
// refused and the field it names), the stop reasons, the error body, the whole message and the stream's events
// in order (through AnthropicWriter); and /v1/messages through the in-process server: the reply equals the
// OpenAI chat endpoint's for the same conversation (greedy), Anthropic's error shape, x-api-key.
#include "server/anthropic_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "in_process_server.h"
#include "server/anthropic_writer.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

CompletionParams parse_messages_ok(const json& body) {
  CompletionParams p;
  std::optional<ApiError> e = parse_anthropic_messages(body.dump(), &p);
  EXPECT_FALSE(e.has_value()) << body.dump() << " -> " << (e ? e->message : "");
  return p;
}

ApiError parse_messages_error(const json& body) {
  CompletionParams p;
  std::optional<ApiError> e = parse_anthropic_messages(body.dump(), &p);
  EXPECT_TRUE(e.has_value()) << body.dump();
  return e.value_or(ApiError{});
}

json minimal() {
  return {{"model", "m"}, {"max_tokens", 8}, {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}};
}

TEST(AnthropicProtocolTest, ParsesAConversation) {
  json body = minimal();
  body["system"] = json::array({{{"type", "text"}, {"text", "Be "}}, {{"type", "text"}, {"text", "brief."}}});
  body["messages"] = json::array(
      {{{"role", "user"}, {"content", "Hello"}},
       {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "Hi."}}})}},
       {{"role", "user"},
        {"content", json::array({{{"type", "text"}, {"text", "More"}, {"cache_control", {{"type", "ephemeral"}}}}})}}});
  body["temperature"] = 0.5;
  body["top_p"] = 0.9;
  body["top_k"] = 5;
  body["stop_sequences"] = json::array({"\n\n", "END"});
  body["stream"] = true;
  body["metadata"] = {{"user_id", "u1"}};
  const CompletionParams p = parse_messages_ok(body);
  EXPECT_TRUE(p.chat);
  EXPECT_EQ(p.model, "m");
  EXPECT_TRUE(p.max_tokens_given);
  EXPECT_EQ(p.sampling.max_tokens, 8);
  ASSERT_EQ(p.messages.size(), 4u);
  EXPECT_EQ(p.messages[0].role, "system");
  EXPECT_EQ(p.messages[0].content, "Be brief.");
  EXPECT_EQ(p.messages[2].role, "assistant");
  EXPECT_EQ(p.messages[2].content, "Hi.");
  EXPECT_EQ(p.messages[3].content, "More");
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.9f);
  EXPECT_EQ(p.sampling.top_k, 5);
  EXPECT_EQ(p.sampling.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(p.stream);
  EXPECT_EQ(p.n, 1);
  EXPECT_FLOAT_EQ(parse_messages_ok(minimal()).sampling.temperature, 1.0f);  // Anthropic's default
}

TEST(AnthropicProtocolTest, RefusesWhatItDoesNotImplementNamingTheField) {
  auto param_of = [](json body) { return parse_messages_error(body).param.value_or(""); };
  json no_max = minimal();
  no_max.erase("max_tokens");
  EXPECT_EQ(param_of(no_max), "max_tokens");
  json no_model = minimal();
  no_model.erase("model");
  EXPECT_EQ(param_of(no_model), "model");
  json server_tool = minimal();
  server_tool["tools"] = json::array({{{"type", "web_search_20250305"}, {"name", "web_search"}}});
  EXPECT_EQ(param_of(server_tool), "tools[0].type");
  json no_schema = minimal();
  no_schema["tools"] = json::array({{{"name", "f"}}});
  EXPECT_EQ(param_of(no_schema), "tools[0].input_schema");
  json bad_schema = minimal();
  bad_schema["tools"] = json::array({{{"name", "f"}, {"input_schema", 3}}});
  EXPECT_EQ(param_of(bad_schema), "tools[0].input_schema");
  json unknown_tool = minimal();
  unknown_tool["tools"] = json::array({{{"name", "f"}, {"input_schema", {{"type", "object"}}}}});
  unknown_tool["tool_choice"] = {{"type", "tool"}, {"name", "g"}};
  EXPECT_EQ(param_of(unknown_tool), "tool_choice");
  json thinking = minimal();
  thinking["thinking"] = {{"type", "enabled"}};
  EXPECT_EQ(param_of(thinking), "thinking.budget_tokens");
  thinking["thinking"] = {{"type", "adaptive"}};
  EXPECT_EQ(param_of(thinking), "thinking.type");
  thinking["thinking"] = {{"type", "disabled"}, {"effort", 1}};
  EXPECT_EQ(param_of(thinking), "thinking.effort");
  json unknown = minimal();
  unknown["frequency_penalty"] = 0.5;
  EXPECT_EQ(param_of(unknown), "frequency_penalty");
  json image = minimal();
  image["messages"][0]["content"] = json::array({{{"type", "image"}, {"source", {}}}});
  EXPECT_EQ(param_of(image), "messages[0].content[0].type");
  json misplaced = minimal();  // a tool_use block in a user turn
  misplaced["messages"][0]["content"] =
      json::array({{{"type", "tool_use"}, {"id", "x"}, {"name", "f"}, {"input", json::object()}}});
  EXPECT_EQ(param_of(misplaced), "messages[0].content[0].type");
  json prefill = minimal();
  prefill["messages"].push_back({{"role", "assistant"}, {"content", "Once"}});
  EXPECT_EQ(param_of(prefill), "messages[1]");
  json system_role = minimal();
  system_role["messages"][0]["role"] = "system";
  EXPECT_EQ(param_of(system_role), "messages[0].role");
  json hot = minimal();
  hot["temperature"] = 1.5;  // Anthropic's range is [0, 1]
  EXPECT_EQ(param_of(hot), "temperature");
  json zero = minimal();
  zero["max_tokens"] = 0;
  EXPECT_EQ(param_of(zero), "max_tokens");
  json empty_stop = minimal();
  empty_stop["stop_sequences"] = json::array({""});
  EXPECT_EQ(param_of(empty_stop), "stop_sequences");
}

TEST(AnthropicProtocolTest, ToolsToolChoiceAndToolTurns) {
  json body = minimal();
  body["tools"] =
      json::array({{{"name", "get_weather"},
                    {"description", "The weather"},
                    {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}});
  body["tool_choice"] = {{"type", "any"}, {"disable_parallel_tool_use", true}};
  body["messages"] = json::array(
      {{{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content",
         json::array(
             {{{"type", "text"}, {"text", "Let me look."}},
              {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}})}},
       {{"role", "user"},
        {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "21 C"}},
                                 {{"type", "tool_result"},
                                  {"tool_use_id", "toolu_2"},
                                  {"is_error", true},
                                  {"content", json::array({{{"type", "text"}, {"text", "timeout"}}})}}})}}});
  const CompletionParams p = parse_messages_ok(body);
  ASSERT_EQ(p.tools.tools.size(), 1u);
  EXPECT_EQ(p.tools.tools[0].name, "get_weather");
  EXPECT_EQ(p.tools.choice, ToolChoice::kRequired);
  EXPECT_FALSE(p.tools.parallel_tool_calls);
  ASSERT_EQ(p.messages.size(), 4u);  // user, assistant (text and a call), two tool results; no empty user turn
  EXPECT_EQ(p.messages[1].content, "Let me look.");
  ASSERT_EQ(p.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(p.messages[1].tool_calls[0].id, "toolu_1");
  EXPECT_EQ(json::parse(p.messages[1].tool_calls[0].arguments), json({{"city", "Paris"}}));
  EXPECT_EQ(p.messages[2].role, "tool");
  EXPECT_EQ(p.messages[2].tool_call_id, "toolu_1");
  EXPECT_EQ(p.messages[2].content, "21 C");
  EXPECT_EQ(p.messages[3].content, "Error: timeout");
  json named = minimal();
  named["tools"] = body["tools"];
  named["tool_choice"] = {{"type", "tool"}, {"name", "get_weather"}};
  const CompletionParams n = parse_messages_ok(named);
  EXPECT_EQ(n.tools.choice, ToolChoice::kNamed);
  EXPECT_EQ(n.tools.named, "get_weather");
  json automatic = minimal();
  automatic["tools"] = body["tools"];
  EXPECT_EQ(parse_messages_ok(automatic).tools.choice, ToolChoice::kAuto);
}

TEST(AnthropicProtocolTest, StopReasonsErrorsAndTheMessage) {
  EXPECT_EQ(anthropic_stop_reason(FinishReason::kStop, "", false), "end_turn");
  EXPECT_EQ(anthropic_stop_reason(FinishReason::kStop, "END", false), "stop_sequence");
  EXPECT_EQ(anthropic_stop_reason(FinishReason::kStop, "", true), "tool_use");
  EXPECT_EQ(anthropic_stop_reason(FinishReason::kLength, "", false), "max_tokens");
  const json e = json::parse(anthropic_error_json(invalid_request("bad", "max_tokens")));
  EXPECT_EQ(e, json({{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "bad"}}}}));
  ApiError busy{503, "busy", "service_unavailable_error", {}, {}};
  EXPECT_EQ(json::parse(anthropic_error_json(busy))["error"]["type"], "overloaded_error");
  EXPECT_EQ(anthropic_error_response(busy).status, 503);

  ChoiceResult c;
  c.text = "Once upon";
  c.finish_reason = FinishReason::kStop;
  c.stop_string = "END";
  const json m = json::parse(anthropic_message("msg_1", "m", c, UsageFigures{5, 2, 0}));
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"], json::array({{{"type", "text"}, {"text", "Once upon"}}}));
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "END");
  EXPECT_EQ(m["usage"], json({{"input_tokens", 5}, {"output_tokens", 2}}));

  ChoiceResult call;
  call.finish_reason = FinishReason::kStop;
  call.called_tools = true;
  call.tool_calls = {{"call_1", "f", R"({"a": 1})"}};
  const json t = json::parse(anthropic_message("msg_2", "m", call, UsageFigures{5, 9, 0}));
  EXPECT_EQ(t["stop_reason"], "tool_use");
  EXPECT_EQ(t["content"],
            json::array({{{"type", "tool_use"}, {"id", "call_1"}, {"name", "f"}, {"input", {{"a", 1}}}}}));
}

// The event names of an SSE body, in order, and the data of each.
std::vector<std::pair<std::string, json>> events_of(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t at = 0;
  while ((at = sse.find("event: ", at)) != std::string::npos) {
    const size_t name_end = sse.find('\n', at);
    const size_t data = sse.find("data: ", name_end);
    const size_t data_end = sse.find("\n\n", data);
    out.emplace_back(sse.substr(at + 7, name_end - at - 7), json::parse(sse.substr(data + 6, data_end - data - 6)));
    at = data_end;
  }
  return out;
}

TEST(AnthropicProtocolTest, ThinkingMapsToEnableThinkingAndComesBackAsAThinkingBlock) {
  json body = minimal();
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
  // An earlier turn's thinking block is accepted and left out of the prompt.
  body["messages"] = json::array(
      {{{"role", "user"}, {"content", "Hi"}},
       {{"role", "assistant"},
        {"content", json::array({{{"type", "thinking"}, {"thinking", "hm"}, {"signature", "s"}},
                                 {{"type", "text"}, {"text", "Hello"}}})}},
       {{"role", "user"}, {"content", "Again"}}});
  CompletionParams p;
  ASSERT_FALSE(parse_anthropic_messages(body.dump(), &p).has_value());
  EXPECT_EQ(p.enable_thinking, true);
  EXPECT_EQ(p.messages[1].content, "Hello");
  body["thinking"] = {{"type", "disabled"}};
  ASSERT_FALSE(parse_anthropic_messages(body.dump(), &p).has_value());
  EXPECT_EQ(p.enable_thinking, false);

  ChoiceResult c;
  c.reasoning = "Hm.";
  c.text = "Hi";
  c.finish_reason = FinishReason::kStop;
  const json whole = json::parse(anthropic_message("msg_1", "m", c, UsageFigures{}));
  ASSERT_EQ(whole["content"].size(), 2u);
  EXPECT_EQ(whole["content"][0], json({{"type", "thinking"}, {"thinking", "Hm."}, {"signature", ""}}));
  EXPECT_EQ(whole["content"][1]["type"], "text");

  IdGenerator ids;
  AnthropicWriter w(ids, "m", false, true);
  std::string sse = w.stream_open(7);
  ChoiceResult piece;
  piece.reasoning = "Hm";
  sse += w.stream_piece(piece, true, std::nullopt);
  piece.reasoning = "";
  piece.text = "Hi";
  sse += w.stream_piece(piece, false, std::nullopt);
  sse += w.stream_close(nullptr, UsageFigures{7, 3, 0}, c);
  const auto events = events_of(sse);
  std::vector<std::string> names;
  for (const auto& [name, data] : events) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "ping", "content_block_start", "content_block_delta",
                                             "content_block_stop", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(events[2].second["content_block"]["type"], "thinking");
  EXPECT_EQ(events[3].second["delta"], json({{"type", "thinking_delta"}, {"thinking", "Hm"}}));
  EXPECT_EQ(events[5].second["index"], 1);
  EXPECT_EQ(events[6].second["delta"]["type"], "text_delta");
}

TEST(AnthropicProtocolTest, TheWritersStreamIsAnthropicsEventSequence) {
  IdGenerator ids;
  AnthropicWriter w(ids, "m", false);
  std::string sse = w.stream_open(7);
  ChoiceResult piece;
  piece.text = "Once";
  sse += w.stream_piece(piece, true, std::nullopt);
  piece.text = "";
  piece.finish_reason = FinishReason::kLength;
  EXPECT_EQ(w.stream_piece(piece, false, std::nullopt), "");  // the finish goes with message_delta
  sse += w.stream_close(nullptr, UsageFigures{7, 3, 0}, piece);
  const auto events = events_of(sse);
  std::vector<std::string> names;
  for (const auto& [name, data] : events) {
    names.push_back(name);
    EXPECT_EQ(data["type"], name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(events[0].second["message"]["id"], w.id());
  EXPECT_EQ(events[0].second["message"]["usage"]["input_tokens"], 7);
  EXPECT_EQ(events[3].second["delta"], json({{"type", "text_delta"}, {"text", "Once"}}));
  EXPECT_EQ(events[5].second["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(events[5].second["usage"]["output_tokens"], 3);
  const ApiError timeout{408, "too slow", "timeout_error", {}, {}};
  const auto error = events_of(w.stream_close(&timeout, UsageFigures{}, piece));
  ASSERT_EQ(error.size(), 1u);
  EXPECT_EQ(error[0].first, "error");
  EXPECT_EQ(error[0].second["error"]["type"], "timeout_error");
}

TEST(AnthropicProtocolTest, AForcedCallStreamsAsAToolUseBlock) {
  IdGenerator ids;
  AnthropicWriter w(ids, "m", true);
  std::string sse = w.stream_open(3);
  ChoiceResult piece;
  piece.tool_call_deltas = {{0, "call_7", "f", "{\"a\""}};
  sse += w.stream_piece(piece, true, std::nullopt);
  piece.tool_call_deltas = {{0, "", "", ": 1}"}};
  sse += w.stream_piece(piece, false, std::nullopt);
  ChoiceResult last;
  last.finish_reason = FinishReason::kStop;
  last.called_tools = true;
  sse += w.stream_close(nullptr, UsageFigures{3, 5, 0}, last);
  const auto events = events_of(sse);
  std::vector<std::string> names;
  for (const auto& [name, data] : events) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"message_start", "ping", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(events[2].second["content_block"],
            json({{"type", "tool_use"}, {"id", "call_7"}, {"name", "f"}, {"input", json::object()}}));
  EXPECT_EQ(events[3].second["delta"], json({{"type", "input_json_delta"}, {"partial_json", "{\"a\""}}));
  EXPECT_EQ(events[6].second["delta"]["stop_reason"], "tool_use");
}

TEST(AnthropicEndpointTest, TheReplyIsTheChatEndpointsAndErrorsAreAnthropicShaped) {
  ApiServerOptions api;
  api.api_key = "secret";
  InProcessServer server({}, api);
  ASSERT_TRUE(server.started());
  const json conversation = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  const json chat = {{"messages", conversation}, {"max_tokens", 24}, {"temperature", 0}};
  const raw_http::HttpReply openai = raw_http::http_request(server.port(), "POST", "/v1/chat/completions", chat.dump(),
                                                            {"Authorization: Bearer secret"});
  ASSERT_EQ(openai.status, 200) << openai.body;
  const json messages = {{"model", "stories260K"}, {"messages", conversation}, {"max_tokens", 24}, {"temperature", 0}};
  const raw_http::HttpReply r =
      raw_http::http_request(server.port(), "POST", "/v1/messages", messages.dump(), {"x-api-key: secret"});
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = json::parse(r.body);
  const json o = json::parse(openai.body);
  EXPECT_EQ(m["content"][0]["text"], o["choices"][0]["message"]["content"]);
  EXPECT_EQ(m["usage"]["input_tokens"], o["usage"]["prompt_tokens"]);
  EXPECT_EQ(m["usage"]["output_tokens"], o["usage"]["completion_tokens"]);
  EXPECT_EQ(m["stop_reason"], o["choices"][0]["finish_reason"] == "length" ? "max_tokens" : "end_turn");

  // count_tokens: the prompt's tokens, as the message's usage counts them.
  const raw_http::HttpReply counted = raw_http::http_request(
      server.port(), "POST", "/v1/messages/count_tokens",
      json({{"model", "stories260K"}, {"messages", conversation}}).dump(), {"x-api-key: secret"});
  ASSERT_EQ(counted.status, 200) << counted.body;
  EXPECT_EQ(json::parse(counted.body), json({{"input_tokens", m["usage"]["input_tokens"]}}));
  const raw_http::HttpReply count_bad = raw_http::http_request(
      server.port(), "POST", "/v1/messages/count_tokens",
      json({{"model", "stories260K"}, {"messages", conversation}, {"stream", true}}).dump(), {"x-api-key: secret"});
  EXPECT_EQ(count_bad.status, 400);
  EXPECT_EQ(json::parse(count_bad.body)["type"], "error");

  const raw_http::HttpReply bad = raw_http::http_request(
      server.port(), "POST", "/v1/messages", json({{"model", "stories260K"}, {"messages", conversation}}).dump(),
      {"x-api-key: secret"});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["type"], "error");
  EXPECT_EQ(json::parse(bad.body)["error"]["type"], "invalid_request_error");
  const raw_http::HttpReply no_key =
      raw_http::http_request(server.port(), "POST", "/v1/messages", messages.dump(), {"x-api-key: wrong"});
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(json::parse(no_key.body)["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace pagoda::server
