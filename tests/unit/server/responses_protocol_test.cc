// The Responses API: the request's translation into chat parameters (instructions, input items, text.format,
// function tools, tool_choice) and the Responses field each error names; the writer's typed events in order with
// their sequence numbers (text, and a function call's arguments), the whole response object; and /v1/responses
// through the in-process server: its output_text is the chat endpoint's for the same conversation (greedy).
#include "server/responses_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "in_process_server.h"
#include "server/responses_writer.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

CompletionParams parse_responses_ok(const json& body, nlohmann::ordered_json* echo = nullptr) {
  CompletionParams p;
  nlohmann::ordered_json local;
  std::optional<ApiError> e = parse_responses_request(body.dump(), &p, echo != nullptr ? echo : &local);
  EXPECT_FALSE(e.has_value()) << body.dump() << " -> " << (e ? e->message : "");
  return p;
}

std::string responses_error_param(const json& body) {
  CompletionParams p;
  nlohmann::ordered_json echo;
  std::optional<ApiError> e = parse_responses_request(body.dump(), &p, &echo);
  EXPECT_TRUE(e.has_value()) << body.dump();
  return e && e->param ? *e->param : "";
}

TEST(ResponsesProtocolTest, TranslatesInputInstructionsFormatAndTools) {
  nlohmann::ordered_json echo;
  const CompletionParams p = parse_responses_ok(
      {{"model", "m"},
       {"instructions", "Be brief."},
       {"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "Hi"}}})}},
                              {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "f"}, {"arguments", "{}"}},
                              {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "42"}},
                              {{"role", "developer"}, {"content", "Answer."}}})},
       {"max_output_tokens", 12},
       {"temperature", 0.5},
       {"top_p", 0.9},
       {"stream", true},
       {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "object"}}}}}}},
       {"tools", json::array({{{"type", "function"}, {"name", "f"}, {"parameters", {{"type", "object"}}}}})},
       {"tool_choice", "auto"},
       {"store", false},
       {"metadata", {{"k", "v"}}}},
      &echo);
  EXPECT_TRUE(p.chat);
  ASSERT_EQ(p.messages.size(), 5u);
  EXPECT_EQ(p.messages[0].role, "system");
  EXPECT_EQ(p.messages[0].content, "Be brief.");
  EXPECT_EQ(p.messages[1].content, "Hi");
  EXPECT_EQ(p.messages[2].role, "assistant");
  ASSERT_EQ(p.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(p.messages[2].tool_calls[0].id, "call_1");
  EXPECT_EQ(p.messages[3].role, "tool");
  EXPECT_EQ(p.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(p.messages[4].role, "developer");
  EXPECT_EQ(p.sampling.max_tokens, 12);
  EXPECT_TRUE(p.max_tokens_given);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.5f);
  EXPECT_TRUE(p.stream);
  ASSERT_TRUE(p.constraint);
  EXPECT_EQ(p.constraint->param, "text.format.schema");
  ASSERT_EQ(p.tools.tools.size(), 1u);
  EXPECT_EQ(p.tools.tools[0].name, "f");
  EXPECT_EQ(echo["instructions"], "Be brief.");
  EXPECT_EQ(echo["max_output_tokens"], 12);
  EXPECT_EQ(echo["text"]["format"]["type"], "json_schema");
  EXPECT_EQ(echo["metadata"]["k"], "v");
  EXPECT_EQ(parse_responses_ok({{"input", "Hi"}}).messages[0].role, "user");
}

TEST(ResponsesProtocolTest, ErrorsNameTheResponsesField) {
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"previous_response_id", "resp_1"}}), "previous_response_id");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"reasoning", {{"summary", "auto"}}}}), "reasoning.summary");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"reasoning", {{"effort", "extreme"}}}}), "reasoning.effort");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"reasoning", 3}}), "reasoning");
  nlohmann::ordered_json echo;
  const CompletionParams effort = parse_responses_ok({{"input", "Hi"}, {"reasoning", {{"effort", "low"}}}}, &echo);
  EXPECT_EQ(effort.reasoning_effort, "low");
  EXPECT_EQ(effort.reasoning_effort_param, "reasoning.effort");
  EXPECT_EQ(echo["reasoning"]["effort"], "low");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"max_output_tokens", 0}}), "max_output_tokens");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"temperature", 3}}), "temperature");
  EXPECT_EQ(responses_error_param({{"model", "m"}}), "input");
  EXPECT_EQ(responses_error_param({{"input", json::array({{{"type", "input_image"}}})}}), "input[0].type");
  EXPECT_EQ(responses_error_param(
                {{"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_file"}}})}}})}}),
            "input[0].content[0].type");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"tools", json::array({{{"type", "web_search"}}})}}),
            "tools[0].type");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"text", {{"format", {{"type", "xml"}}}}}}), "text.format.type");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}),
            "text.format.schema");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"truncation", "auto"}}), "truncation");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"max_tokens", 5}}), "max_tokens");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"include", {"message.output_text.logprobs"}}}), "include");
  EXPECT_EQ(responses_error_param({{"input", "Hi"}, {"include", "reasoning.encrypted_content"}}), "include");
}

// The @openai/agents SDK sends include on every call: empty, or asking for parts of items this server never makes.
TEST(ResponsesProtocolTest, IncludeOfWhatThisServerNeverMakesIsAccepted) {
  parse_responses_ok({{"input", "Hi"}, {"include", json::array()}});
  parse_responses_ok(
      {{"input", "Hi"}, {"include", {"reasoning.encrypted_content", "file_search_call.results", "web_search_call.results"}}});
}

// The "event:" names of an SSE body and their data, in order.
std::vector<std::pair<std::string, json>> responses_events(const std::string& sse) {
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

TEST(ResponsesProtocolTest, AReasoningItemGivenBackGoesWithTheAssistantTurnAfterIt) {
  const json reasoning = {{"type", "reasoning"},
                          {"id", "rs_1"},
                          {"summary", json::array()},
                          {"content", json::array({{{"type", "reasoning_text"}, {"text", "hm"}}})}};
  const CompletionParams p = parse_responses_ok(
      {{"input", json::array({{{"role", "user"}, {"content", "Hi"}},
                              reasoning,
                              {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}},
                              {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "1"}}})}});
  ASSERT_EQ(p.messages.size(), 3u);
  EXPECT_EQ(p.messages[1].reasoning_content, "hm");
  EXPECT_EQ(p.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(responses_error_param({{"input", json::array({{{"type", "reasoning"}, {"content", "x"}}})}}),
            "input[0].content");
}

TEST(ResponsesProtocolTest, AReasoningIsAnItemBeforeTheMessageWholeAndStreamed) {
  IdGenerator ids;
  ResponsesWriter w(ids, "m", nlohmann::ordered_json::object());
  std::string sse = w.stream_open(4);
  ChoiceResult piece;
  piece.reasoning = "Think";
  sse += w.stream_piece(piece, true, std::nullopt);
  piece.reasoning = "ing.";
  piece.text = "Hi";
  sse += w.stream_piece(piece, false, std::nullopt);
  ChoiceResult last;
  last.finish_reason = FinishReason::kStop;
  sse += w.stream_close(nullptr, UsageFigures{4, 6, 0, 3}, last);
  const auto events = responses_events(sse);
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.first);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "response.created", "response.in_progress", "response.output_item.added",
                       "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
                       "response.output_item.added", "response.content_part.added", "response.output_text.delta",
                       "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
                       "response.output_text.done", "response.content_part.done", "response.output_item.done",
                       "response.completed"}));
  EXPECT_EQ(events[2].second["item"]["type"], "reasoning");
  EXPECT_EQ(events[3].second["part"]["type"], "reasoning_text");
  EXPECT_EQ(events[5].second["delta"], "ing.");
  EXPECT_EQ(events[9].second["text"], "Thinking.");
  const json& done = events.back().second["response"];
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["content"][0], json({{"type", "reasoning_text"}, {"text", "Thinking."}}));
  EXPECT_EQ(done["output"][1]["type"], "message");
  EXPECT_EQ(done["usage"]["output_tokens_details"]["reasoning_tokens"], 3);

  IdGenerator ids_whole;
  ResponsesWriter whole(ids_whole, "m", nlohmann::ordered_json::object());
  ChoiceResult c;
  c.reasoning = "Thinking.";
  c.text = "Hi";
  c.finish_reason = FinishReason::kStop;
  const json r = json::parse(whole.whole_response({c}, UsageFigures{4, 6, 0, 3}));
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_TRUE(r["output"][0]["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Thinking.");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Hi");
}

TEST(ResponsesProtocolTest, TheWritersEventsComeInOrderNumbered) {
  IdGenerator ids;
  ResponsesWriter w(ids, "m", {{"instructions", nullptr}});
  std::string sse = w.stream_open(4);
  ChoiceResult piece;
  piece.text = "Once";
  sse += w.stream_piece(piece, true, std::nullopt);
  piece.text = " upon";
  sse += w.stream_piece(piece, false, std::nullopt);
  piece.text.clear();
  piece.tool_call_deltas = {{0, "call_9", "f", "{\"a\""}};
  sse += w.stream_piece(piece, false, std::nullopt);
  piece.tool_call_deltas = {{0, "", "", ": 1}"}};
  sse += w.stream_piece(piece, false, std::nullopt);
  ChoiceResult last;
  last.finish_reason = FinishReason::kStop;
  sse += w.stream_close(nullptr, UsageFigures{4, 6, 0}, last);
  const auto events = responses_events(sse);
  std::vector<std::string> names;
  for (size_t i = 0; i < events.size(); ++i) {
    names.push_back(events[i].first);
    EXPECT_EQ(events[i].second["type"], events[i].first);
    EXPECT_EQ(events[i].second["sequence_number"], int(i));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.delta", "response.output_item.added",
                "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                "response.output_text.done", "response.content_part.done", "response.output_item.done",
                "response.function_call_arguments.done", "response.output_item.done", "response.completed"}));
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  EXPECT_EQ(events[0].second["response"]["id"], w.id());
  EXPECT_EQ(events[9].second["text"], "Once upon");
  EXPECT_EQ(events[12].second["arguments"], "{\"a\": 1}");
  const json& done = events.back().second["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Once upon");
  EXPECT_EQ(done["output"][1]["call_id"], "call_9");
  EXPECT_EQ(done["usage"]["total_tokens"], 10);

  ResponsesWriter cut(ids, "m", nlohmann::ordered_json::object());
  cut.stream_open(1);
  ChoiceResult by_length;
  by_length.finish_reason = FinishReason::kLength;
  EXPECT_EQ(responses_events(cut.stream_close(nullptr, UsageFigures{}, by_length)).back().first, "response.incomplete");
  const ApiError timeout{408, "too slow", "timeout_error", {}, "request_timeout"};
  const auto error = responses_events(cut.stream_close(&timeout, UsageFigures{}, by_length));
  ASSERT_EQ(error.size(), 1u);
  EXPECT_EQ(error[0].first, "error");
  EXPECT_EQ(error[0].second["code"], "request_timeout");
}

TEST(ResponsesEndpointTest, OutputTextIsTheChatEndpointsForTheSameConversation) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const json chat = {{"messages", json::array({{{"role", "system"}, {"content", "Tell a story."}},
                                               {{"role", "user"}, {"content", "Once upon a time"}}})},
                     {"max_tokens", 24},
                     {"temperature", 0}};
  const raw_http::HttpReply c = raw_http::http_request(server.port(), "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(c.status, 200) << c.body;
  const json request = {
      {"instructions", "Tell a story."}, {"input", "Once upon a time"}, {"max_output_tokens", 24}, {"temperature", 0}};
  const raw_http::HttpReply r = raw_http::http_request(server.port(), "POST", "/v1/responses", request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json o = json::parse(c.body), resp = json::parse(r.body);
  EXPECT_EQ(resp["object"], "response");
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], o["choices"][0]["message"]["content"]);
  EXPECT_EQ(resp["usage"]["input_tokens"], o["usage"]["prompt_tokens"]);
  EXPECT_EQ(resp["status"], o["choices"][0]["finish_reason"] == "length" ? "incomplete" : "completed");
  EXPECT_EQ(resp["output"][0]["status"], resp["status"]);  // the message item is cut too
  const raw_http::HttpReply bad = raw_http::http_request(server.port(), "POST", "/v1/responses",
                                                         json({{"input", "Hi"}, {"previous_response_id", "x"}}).dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("\"param\":\"previous_response_id\""));
}

}  // namespace
}  // namespace pagoda::server
