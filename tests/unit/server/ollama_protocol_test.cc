// Ollama's API: parsing /api/chat and /api/generate (messages and their tool calls, options mapped, ignored or
// refused by name, format, think, the default stream, raw prompts, a load call), /api/embed's, the model-name
// match, the error body, the writer's NDJSON lines and whole answer; and the endpoints through the in-process
// server: /api/chat's text equals the OpenAI chat endpoint's (greedy), NDJSON streams end with done and the
// counts, Ollama's errors, /api/tags, /api/show, /api/ps, /api/version and "Ollama is running" at /.
#include "server/ollama_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "in_process_server.h"
#include "server/ollama_writer.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json chat_body() {
  return {{"model", "stories260K"}, {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}};
}

OllamaRequest chat_ok(const json& body) {
  OllamaRequest r;
  std::optional<ApiError> e = parse_ollama_chat(body.dump(), &r);
  EXPECT_FALSE(e.has_value()) << body.dump() << " -> " << (e ? e->message : "");
  return r;
}

ApiError chat_error(const json& body) {
  OllamaRequest r;
  std::optional<ApiError> e = parse_ollama_chat(body.dump(), &r);
  EXPECT_TRUE(e.has_value()) << body.dump();
  return e.value_or(ApiError{});
}

ApiError generate_error(const json& body) {
  OllamaRequest r;
  std::optional<ApiError> e = parse_ollama_generate(body.dump(), &r);
  EXPECT_TRUE(e.has_value()) << body.dump();
  return e.value_or(ApiError{});
}

TEST(OllamaProtocolTest, ChatStreamsByDefaultWithOllamasSamplingDefaults) {
  const OllamaRequest r = chat_ok(chat_body());
  EXPECT_EQ(r.model, "stories260K");
  EXPECT_TRUE(r.params.chat);
  EXPECT_TRUE(r.params.stream);
  ASSERT_EQ(r.params.messages.size(), 1u);
  EXPECT_EQ(r.params.messages[0].role, "user");
  EXPECT_EQ(r.params.messages[0].content, "Hi");
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, kOllamaTemperature);
  EXPECT_EQ(r.params.sampling.top_k, kOllamaTopK);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, kOllamaTopP);
  EXPECT_FALSE(r.params.max_tokens_given);
  json off = chat_body();
  off["stream"] = false;
  EXPECT_FALSE(chat_ok(off).params.stream);
}

TEST(OllamaProtocolTest, OptionsMapToSamplingAndContext) {
  json body = chat_body();
  body["options"] = {{"temperature", 0},     {"top_p", 0.5},         {"top_k", 7},           {"min_p", 0.1},
                     {"seed", 42},           {"num_predict", 12},    {"stop", {"\n", "x"}},  {"repeat_penalty", 1.2},
                     {"presence_penalty", 0.5}, {"frequency_penalty", 0.25}, {"num_ctx", 128}, {"num_gpu", 99},
                     {"num_thread", 8}};
  const OllamaRequest r = chat_ok(body);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 0.5f);
  EXPECT_EQ(r.params.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(r.params.sampling.min_p, 0.1f);
  EXPECT_EQ(r.params.sampling.seed, 42u);
  EXPECT_TRUE(r.params.max_tokens_given);
  EXPECT_EQ(r.params.sampling.max_tokens, 12);
  EXPECT_EQ(r.params.sampling.stop, (std::vector<std::string>{"\n", "x"}));
  EXPECT_FLOAT_EQ(r.params.sampling.repetition_penalty, 1.2f);
  EXPECT_FLOAT_EQ(r.params.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.sampling.frequency_penalty, 0.25f);
  EXPECT_EQ(r.num_ctx, 128);
  EXPECT_EQ(r.ignored_options, (std::vector<std::string>{"num_gpu", "num_thread"}));
  // The AI SDK's provider sends these beside options: they apply unless options sets the same.
  json top = chat_body();
  top["temperature"] = 0;
  top["top_p"] = 0.5;
  top["max_output_tokens"] = 9;
  top["options"] = {{"top_p", 0.7}};
  const OllamaRequest t = chat_ok(top);
  EXPECT_FLOAT_EQ(t.params.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(t.params.sampling.top_p, 0.7f);
  EXPECT_EQ(t.params.sampling.max_tokens, 9);
  // num_predict -1 (until the end) and -2 (fill the context) are the server's default.
  body["options"] = {{"num_predict", -1}};
  EXPECT_FALSE(chat_ok(body).params.max_tokens_given);
}

TEST(OllamaProtocolTest, UnknownAndUnimplementedOptionsAreRefusedByName) {
  json body = chat_body();
  body["options"] = {{"mirostat", 2}};
  ApiError e = chat_error(body);
  EXPECT_EQ(e.param, "options.mirostat");
  EXPECT_THAT(e.message, HasSubstr("options.mirostat"));
  body["options"] = {{"temprature", 0.5}};
  EXPECT_EQ(chat_error(body).param, "options.temprature");
  // A range error names Ollama's option, not the OpenAI field it became.
  body["options"] = {{"top_p", 3}};
  e = chat_error(body);
  EXPECT_EQ(e.param, "options.top_p");
  EXPECT_THAT(e.message, HasSubstr("'options.top_p'"));
  body["options"] = {{"num_predict", 0}};
  EXPECT_EQ(chat_error(body).param, "options.num_predict");
}

TEST(OllamaProtocolTest, FormatIsJsonModeOrASchema) {
  json body = chat_body();
  body["format"] = "json";
  OllamaRequest r = chat_ok(body);
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->spec.kind, grammar::GrammarSpec::Kind::kJsonObject);
  body["format"] = {{"type", "object"}, {"properties", {{"b", {{"type", "integer"}}}, {"a", {{"type", "string"}}}}}};
  r = chat_ok(body);
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->spec.kind, grammar::GrammarSpec::Kind::kJsonSchema);
  body["format"] = "yaml";
  EXPECT_EQ(chat_error(body).param, "format");
}

TEST(OllamaProtocolTest, ToolCallsAndToolResultsBecomeChatMessages) {
  json body = chat_body();
  body["messages"].push_back({{"role", "assistant"},
                              {"content", ""},
                              {"tool_calls", {{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Oslo"}}}}}}}}});
  body["messages"].push_back({{"role", "tool"}, {"content", "11 degrees"}, {"tool_name", "get_weather"}});
  body["messages"].push_back({{"role", "user"}, {"content", "And?"}});
  body["tools"] = {{{"type", "function"},
                    {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
  const OllamaRequest r = chat_ok(body);
  ASSERT_EQ(r.params.messages.size(), 4u);
  ASSERT_EQ(r.params.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.params.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.params.messages[1].tool_calls[0].arguments), json({{"city", "Oslo"}}));
  EXPECT_EQ(r.params.messages[2].role, "tool");
  EXPECT_EQ(r.params.messages[2].name, "get_weather");
  EXPECT_TRUE(r.params.tools.active());
  EXPECT_EQ(r.params.tools.choice, ToolChoice::kAuto);
}

TEST(OllamaProtocolTest, ThinkImagesAndUnknownFieldsAreOllamasErrors) {
  json body = chat_body();
  body["think"] = true;  // whether the model can think is the server's to say (it knows the template)
  EXPECT_EQ(chat_ok(body).think, std::optional<bool>(true));
  body["think"] = "medium";
  EXPECT_EQ(chat_ok(body).think_level, std::optional<std::string>("medium"));
  body["think"] = "extreme";
  EXPECT_EQ(chat_error(body).param, "think");
  body["think"] = false;
  EXPECT_EQ(chat_ok(body).think, std::optional<bool>(false));
  body = chat_body();
  body["messages"][0]["images"] = {"aGk="};
  EXPECT_EQ(chat_error(body).param, "messages[0].images");
  body = chat_body();
  body["truncate"] = true;
  EXPECT_EQ(chat_error(body).param, "truncate");
  body = chat_body();
  body["keep_alive"] = "5m";
  chat_ok(body);
  body.erase("model");
  EXPECT_EQ(chat_error(body).param, "model");
}

TEST(OllamaProtocolTest, GenerateUsesTheTemplateUnlessRaw) {
  OllamaRequest r;
  ASSERT_FALSE(parse_ollama_generate(
      json({{"model", "m"}, {"prompt", "Once"}, {"system", "Be brief"}, {"stream", false}}).dump(), &r));
  EXPECT_TRUE(r.params.chat);
  ASSERT_EQ(r.params.messages.size(), 2u);
  EXPECT_EQ(r.params.messages[0].role, "system");
  EXPECT_EQ(r.params.messages[1].content, "Once");
  EXPECT_FALSE(r.params.stream);
  ASSERT_FALSE(parse_ollama_generate(json({{"model", "m"}, {"prompt", "Once"}, {"raw", true}}).dump(), &r));
  EXPECT_FALSE(r.params.chat);
  ASSERT_EQ(r.params.prompts.size(), 1u);
  EXPECT_EQ(r.params.prompts[0].text, "Once");
  ASSERT_FALSE(
      parse_ollama_generate(json({{"model", "m"}, {"prompt", "Once"}, {"raw", true}, {"format", "json"}}).dump(), &r));
  ASSERT_TRUE(r.params.constraint);
  // No prompt: Ollama's call that loads the model.
  ASSERT_FALSE(parse_ollama_generate(json({{"model", "m"}}).dump(), &r));
  EXPECT_TRUE(r.load_only);
  for (const char* field : {"template", "context", "suffix", "images"}) {
    json body = {{"model", "m"}, {"prompt", "x"}};
    body[field] = std::string(field) == "context" || std::string(field) == "images" ? json::array({1}) : json("t");
    EXPECT_EQ(generate_error(body).param, field);
  }
}

TEST(OllamaProtocolTest, EmbedAndLegacyEmbeddings) {
  EmbeddingParams p;
  std::string model;
  ASSERT_FALSE(parse_ollama_embed(json({{"model", "m"}, {"input", {"a", "b"}}, {"truncate", true}}).dump(), false,
                                  &p, &model));
  EXPECT_EQ(model, "m");
  EXPECT_EQ(p.inputs.size(), 2u);
  ASSERT_FALSE(parse_ollama_embed(json({{"model", "m"}, {"prompt", "a"}}).dump(), true, &p, &model));
  EXPECT_EQ(p.inputs.size(), 1u);
  std::optional<ApiError> e = parse_ollama_embed(json({{"model", "m"}, {"input", "a"}}).dump(), true, &p, &model);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "input");
}

TEST(OllamaProtocolTest, ModelNamesErrorsAndTimestamps) {
  EXPECT_TRUE(ollama_model_matches("stories260K", "stories260K"));
  EXPECT_TRUE(ollama_model_matches("stories260K:latest", "stories260K"));
  EXPECT_FALSE(ollama_model_matches("llama3.2", "stories260K"));
  EXPECT_FALSE(ollama_model_matches("stories260K:7b", "stories260K"));
  EXPECT_EQ(ollama_model_name("stories260K"), "stories260K:latest");
  EXPECT_EQ(ollama_model_name("qwen:7b"), "qwen:7b");
  const ApiError nf = ollama_model_not_found("llama3.2");
  EXPECT_EQ(nf.http_status, 404);
  EXPECT_EQ(json::parse(ollama_error_json(nf)), json({{"error", "model \"llama3.2\" not found, try pulling it first"}}));
  EXPECT_THAT(ollama_timestamp(), ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{9}Z"));
}

std::vector<json> lines(const std::string& ndjson) {
  std::vector<json> out;
  std::istringstream in(ndjson);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

TEST(OllamaWriterTest, StreamsNdjsonLinesAndEndsWithTheCounts) {
  IdGenerator ids;
  OllamaWriter w(ids, true, "m:latest");
  EXPECT_EQ(w.stream_content_type(), "application/x-ndjson");
  ChoiceResult piece;
  piece.text = "Hel";
  std::string out = w.stream_piece(piece, true, std::nullopt);
  piece.text.clear();
  piece.tool_call_deltas = {{0, "call_1", "f", "{\"a\""}};
  out += w.stream_piece(piece, false, std::nullopt);
  piece.tool_call_deltas = {{0, "", "", ":1}"}};
  out += w.stream_piece(piece, false, std::nullopt);
  ChoiceResult last;
  last.finish_reason = FinishReason::kStop;
  UsageFigures usage{5, 3, 0, 0, 1.0};
  out += w.stream_close(nullptr, usage, last);
  const std::vector<json> ls = lines(out);
  ASSERT_EQ(ls.size(), 3u) << out;
  EXPECT_EQ(ls[0]["message"], json({{"role", "assistant"}, {"content", "Hel"}}));
  EXPECT_EQ(ls[0]["done"], false);
  EXPECT_EQ(ls[0]["model"], "m:latest");
  EXPECT_EQ(ls[1]["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(ls[1]["message"]["tool_calls"][0]["function"]["arguments"], json({{"a", 1}}));
  EXPECT_EQ(ls[2]["done"], true);
  EXPECT_EQ(ls[2]["done_reason"], "stop");
  EXPECT_EQ(ls[2]["prompt_eval_count"], 5);
  EXPECT_EQ(ls[2]["eval_count"], 3);
  EXPECT_EQ(ls[2]["load_duration"], 0);
  EXPECT_EQ(ls[2]["total_duration"].get<int64_t>(),
            ls[2]["prompt_eval_duration"].get<int64_t>() + ls[2]["eval_duration"].get<int64_t>());
  const ApiError boom = invalid_request("boom");
  EXPECT_EQ(json::parse(w.stream_close(&boom, usage, last))["error"], "boom");
}

TEST(OllamaWriterTest, AWholeGenerateAnswerIsOneObject) {
  IdGenerator ids;
  OllamaWriter w(ids, false, "m");
  ChoiceResult c;
  c.text = "Once upon";
  c.finish_reason = FinishReason::kLength;
  const json j = json::parse(w.whole_response({c}, UsageFigures{4, 2, 0, 0, 0.5}));
  EXPECT_EQ(j["response"], "Once upon");
  EXPECT_EQ(j["done"], true);
  EXPECT_EQ(j["done_reason"], "length");
  EXPECT_EQ(j["eval_count"], 2);
}

TEST(OllamaWriterTest, AReasoningGoesToThinkingApartFromTheContent) {
  IdGenerator ids;
  OllamaWriter chat(ids, true, "m");
  ChoiceResult piece;
  piece.reasoning = "hmm";
  const json streamed = json::parse(chat.stream_piece(piece, true, std::nullopt));
  EXPECT_EQ(streamed["message"]["thinking"], "hmm");
  EXPECT_EQ(streamed["message"]["content"], "");
  ChoiceResult c;
  c.text = "yes";
  c.reasoning = "hmm";
  c.finish_reason = FinishReason::kStop;
  const json whole = json::parse(chat.whole_response({c}, UsageFigures{4, 2, 0, 1, 0.5}));
  EXPECT_EQ(whole["message"]["thinking"], "hmm");
  EXPECT_EQ(whole["message"]["content"], "yes");
  OllamaWriter generate(ids, false, "m");
  const json g = json::parse(generate.whole_response({c}, UsageFigures{4, 2, 0, 1, 0.5}));
  EXPECT_EQ(g["thinking"], "hmm");
  EXPECT_EQ(g["response"], "yes");
  c.reasoning.clear();
  EXPECT_FALSE(json::parse(generate.whole_response({c}, UsageFigures{})).contains("thinking"));
}

TEST(OllamaEndpointTest, ChatIsTheChatEndpointsTextInOllamasShapes) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const json conversation = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  const raw_http::HttpReply openai = raw_http::http_request(
      server.port(), "POST", "/v1/chat/completions",
      json({{"messages", conversation}, {"max_tokens", 24}, {"temperature", 0}}).dump());
  ASSERT_EQ(openai.status, 200) << openai.body;
  const json o = json::parse(openai.body);
  const json body = {{"model", "stories260K:latest"},
                     {"messages", conversation},
                     {"stream", false},
                     {"options", {{"temperature", 0}, {"num_predict", 24}}}};
  const raw_http::HttpReply r = raw_http::http_request(server.port(), "POST", "/api/chat", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = json::parse(r.body);
  EXPECT_EQ(m["model"], "stories260K:latest");
  EXPECT_EQ(m["message"]["content"], o["choices"][0]["message"]["content"]);
  EXPECT_EQ(m["prompt_eval_count"], o["usage"]["prompt_tokens"]);
  EXPECT_EQ(m["eval_count"], o["usage"]["completion_tokens"]);
  EXPECT_EQ(m["done"], true);

  // Streamed by default: NDJSON lines whose pieces make the same text, the last with done and the counts.
  json streamed = body;
  streamed.erase("stream");
  const raw_http::HttpReply s = raw_http::http_request(server.port(), "POST", "/api/chat", streamed.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_THAT(s.headers, HasSubstr("application/x-ndjson"));
  const std::vector<json> ls = lines(s.body);
  ASSERT_GE(ls.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < ls.size(); ++i) {
    EXPECT_EQ(ls[i]["done"], false);
    text += ls[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, m["message"]["content"]);
  EXPECT_EQ(ls.back()["done"], true);
  EXPECT_EQ(ls.back()["eval_count"], m["eval_count"]);

  // /api/generate, raw: the prompt as is.
  const raw_http::HttpReply g = raw_http::http_request(
      server.port(), "POST", "/api/generate",
      json({{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"raw", true}, {"stream", false},
            {"options", {{"temperature", 0}, {"num_predict", 8}}}})
          .dump());
  ASSERT_EQ(g.status, 200) << g.body;
  EXPECT_EQ(json::parse(g.body)["eval_count"], 8);

  // Ollama's errors: {"error": "..."} with the status.
  const raw_http::HttpReply nf = raw_http::http_request(
      server.port(), "POST", "/api/chat", json({{"model", "llama3.2"}, {"messages", conversation}}).dump());
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(json::parse(nf.body), json({{"error", "model \"llama3.2\" not found, try pulling it first"}}));
  const raw_http::HttpReply bad = raw_http::http_request(server.port(), "POST", "/api/chat", "{");
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(json::parse(bad.body).contains("error"));
  const raw_http::HttpReply pull = raw_http::http_request(server.port(), "POST", "/api/pull", "{}");
  EXPECT_EQ(pull.status, 404);
  EXPECT_THAT(json::parse(pull.body)["error"].get<std::string>(), HasSubstr("/api/pull is not supported"));
}

TEST(OllamaEndpointTest, InfoEndpointsAndTheProbe) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const json tags = json::parse(raw_http::http_request(server.port(), "GET", "/api/tags", "").body);
  ASSERT_EQ(tags["models"].size(), 1u);
  EXPECT_EQ(tags["models"][0]["name"], "stories260K:latest");
  const json ps = json::parse(raw_http::http_request(server.port(), "GET", "/api/ps", "").body);
  EXPECT_EQ(ps["models"][0]["model"], "stories260K:latest");
  EXPECT_GT(ps["models"][0]["context_length"].get<int64_t>(), 0);
  const raw_http::HttpReply show =
      raw_http::http_request(server.port(), "POST", "/api/show", json({{"model", "stories260K"}}).dump());
  ASSERT_EQ(show.status, 200) << show.body;
  EXPECT_THAT(json::parse(show.body)["capabilities"], ::testing::Contains("completion"));
  EXPECT_EQ(raw_http::http_request(server.port(), "POST", "/api/show", json({{"model", "x"}}).dump()).status, 404);
  EXPECT_TRUE(json::parse(raw_http::http_request(server.port(), "GET", "/api/version", "").body).contains("version"));
  const raw_http::HttpReply probe = raw_http::http_request(server.port(), "GET", "/", "");
  EXPECT_EQ(probe.body, "Ollama is running");
  const raw_http::HttpReply page = raw_http::http_request(server.port(), "GET", "/", "", {"Accept: text/html"});
  EXPECT_THAT(page.body, HasSubstr("<html"));
}

TEST(OllamaDurationTest, GoDurationsAndSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_ollama_duration("5m"), milliseconds(300'000));
  EXPECT_EQ(parse_ollama_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_ollama_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(parse_ollama_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_ollama_duration("0"), milliseconds(0));
  EXPECT_EQ(parse_ollama_duration("30"), milliseconds(30'000));  // a plain number: seconds
  EXPECT_EQ(parse_ollama_duration("-1"), milliseconds(-1));      // negative: forever
  EXPECT_EQ(parse_ollama_duration("-5m"), milliseconds(-1));
  EXPECT_EQ(parse_ollama_duration("5 m"), std::nullopt);
  EXPECT_EQ(parse_ollama_duration("5x"), std::nullopt);
  EXPECT_EQ(parse_ollama_duration("m"), std::nullopt);
  EXPECT_EQ(parse_ollama_duration(""), std::nullopt);
  EXPECT_EQ(parse_ollama_duration("1..2s"), std::nullopt);
  EXPECT_EQ(parse_ollama_keep_alive(nlohmann::ordered_json(2)), milliseconds(2'000));
  EXPECT_EQ(parse_ollama_keep_alive(nlohmann::ordered_json(-1)), milliseconds(-1));
  EXPECT_EQ(parse_ollama_keep_alive(nlohmann::ordered_json(true)), std::nullopt);
}

TEST(OllamaDurationTest, AMalformedKeepAliveIsRefusedByName) {
  OllamaRequest req;
  std::optional<ApiError> e = parse_ollama_chat(R"({"model":"m","messages":[],"keep_alive":"soon"})", &req);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "keep_alive");
  ASSERT_FALSE(parse_ollama_chat(R"({"model":"m","messages":[],"keep_alive":"1s"})", &req).has_value());
  EXPECT_EQ(req.keep_alive, std::optional<std::chrono::milliseconds>(1000));
}

}  // namespace
}  // namespace pagoda::server
