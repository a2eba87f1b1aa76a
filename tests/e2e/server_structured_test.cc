// Structured outputs and tool calls through `pagoda serve` with the bundled model, end to end: the real clients
// (node_clients/structured_test.mjs: the openai SDK's parse and streamed tool calls, LangChain, the Vercel AI
// SDK), and curl for what clients do not reach: a grammar that can never finish ends by length, schemas and
// grammars that cannot be enforced are 400s naming their field, a grammar that overflows mid-request ends with an
// error, vLLM's extra fields on /v1/completions, and logit_bias / min_tokens / stop_token_ids; and the property test
// (json_schema_suite/served_property_test.mjs): 200 random schemas, greedy and sampled, every complete output
// validates with ajv.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// POSTs `body` (through a file: no shell quoting) and returns the response body.
json curl_post_json(const ServerProcess& s, const std::string& path, const json& body) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/body.json", body.dump());
  const std::string out = run_command("curl -s http://127.0.0.1:" + std::to_string(s.port()) + path +
                                      " -H 'Content-Type: application/json' -d @" + dir + "/body.json");
  std::filesystem::remove_all(dir);
  return json::parse(out, nullptr, false);
}

TEST(ServerStructuredTest, RealClientsGetObjectsAndToolCalls) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  for (const char* package : {"openai", "zod", "@langchain/openai", "ai", "@ai-sdk/openai-compatible"})
    ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/" + package))
        << package << " is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out =
      run_command("node " + dir + "/structured_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

TEST(ServerStructuredTest, TwoHundredRandomSchemasOutputsValidateWithAjv) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/json_schema_suite";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/ajv-formats"))
      << "ajv is missing: scripts/install-deps.sh --test installs it (npm ci in " << dir << ")";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out = run_command(
      "node " + dir + "/served_property_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " 200 2>&1");
  EXPECT_THAT(out, HasSubstr("property test passed")) << out;
}

TEST(ServerStructuredTest, ConstraintsOverCurl) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const json messages = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});

  // A grammar that cannot finish within max_tokens stops there, by length, with what it allowed; one that matches
  // no string at all is a 400.
  json r =
      curl_post_json(server, "/v1/completions",
                     {{"prompt", "Once upon a time"}, {"max_tokens", 7}, {"guided_grammar", "root ::= (\"ab\"){300}"}});
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 7);
  EXPECT_TRUE(r["choices"][0]["text"].get<std::string>().starts_with("abab")) << r.dump();

  r = curl_post_json(server, "/v1/completions", {{"prompt", "x"}, {"guided_grammar", "root ::= \"ab\" root"}});
  EXPECT_EQ(r["error"]["param"], "guided_grammar") << r.dump();
  EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("matches no string")) << r.dump();

  // vLLM's fields on /v1/completions: the text matches, and the request ends when the grammar does.
  r = curl_post_json(server, "/v1/completions",
                     {{"prompt", "Once upon a time"},
                      {"max_tokens", 50},
                      {"temperature", 1.0},
                      {"seed", 1},
                      {"guided_regex", "[0-9]{3}-[a-z]{2}"}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  EXPECT_THAT(r["choices"][0]["text"].get<std::string>(), ::testing::MatchesRegex("[0-9]{3}-[a-z]{2}"));
  r = curl_post_json(
      server, "/v1/chat/completions",
      {{"messages", messages}, {"max_tokens", 30}, {"structured_outputs", {{"choice", {"left", "right"}}}}});
  const std::string choice = r["choices"][0]["message"]["content"];
  EXPECT_TRUE(choice == "left" || choice == "right") << r.dump();
  // json_schema, streamed: the chunks join into an object of the schema.
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}},
                       {"required", {"n"}},
                       {"additionalProperties", false}};
  r = curl_post_json(
      server, "/v1/chat/completions",
      {{"messages", messages},
       {"max_tokens", 40},
       {"temperature", 0},
       {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}});
  const json obj = json::parse(r["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(obj.is_object()) << r.dump();
  EXPECT_GE(obj["n"].get<int>(), 1);
  EXPECT_LE(obj["n"].get<int>(), 9);

  // What cannot be enforced is a 400 naming its field, never a 200 that may violate it.
  r = curl_post_json(server, "/v1/chat/completions",
                     {{"messages", messages},
                      {"response_format",
                       {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "bogus"}}}}}}}});
  EXPECT_EQ(r["error"]["param"], "response_format.json_schema.schema") << r.dump();
  // iri: a format JSON Schema defines that pagoda does not enforce (a name it does not define is an annotation).
  r = curl_post_json(server, "/v1/completions",
                     {{"prompt", "x"}, {"guided_json", {{"type", "string"}, {"format", "iri"}}}});
  EXPECT_EQ(r["error"]["param"], "guided_json") << r.dump();
  r = curl_post_json(server, "/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= undefined-rule"}});
  EXPECT_EQ(r["error"]["param"], "grammar") << r.dump();
  r = curl_post_json(server, "/v1/completions", {{"prompt", "x"}, {"guided_regex", "(unclosed"}});
  EXPECT_EQ(r["error"]["param"], "guided_regex") << r.dump();
  r = curl_post_json(
      server, "/v1/chat/completions",
      {{"messages", messages},
       {"tools",
        {{{"type", "function"},
          {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"unevaluatedProperties", false}}}}}}}},
       {"tool_choice", "required"}});
  EXPECT_EQ(r["error"]["param"], "tools") << r.dump();
}

TEST(ServerStructuredTest, ToolChoiceRequiredOverCurl) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const json tools = {
      {{"type", "function"},
       {"function",
        {{"name", "pick"},
         {"parameters",
          {{"type", "object"}, {"properties", {{"color", {{"enum", {"red", "blue"}}}}}}, {"required", {"color"}}}}}}}};
  json r = curl_post_json(server, "/v1/chat/completions",
                          {{"messages", json::array({{{"role", "user"}, {"content", "Pick"}}})},
                           {"tools", tools},
                           {"tool_choice", "required"},
                           {"parallel_tool_calls", false},
                           {"max_tokens", 60},
                           {"temperature", 0}});
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
  EXPECT_TRUE(msg["content"].is_null()) << r.dump();
  ASSERT_TRUE(msg.contains("tool_calls")) << r.dump();
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << r.dump();
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "pick");
  const json args = json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["color"] == "red" || args["color"] == "blue") << args;
}

TEST(ServerStructuredTest, LegacyFunctionsOverCurl) {
  // The legacy functions API: a named function_call is forced by its parameters' grammar and answered as
  // message.function_call with finish_reason "function_call", whole and streamed.
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const json functions = {
      {{"name", "pick"},
       {"parameters",
        {{"type", "object"}, {"properties", {{"color", {{"enum", {"red", "blue"}}}}}}, {"required", {"color"}}}}}};
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Pick"}}})},
                     {"functions", functions},
                     {"function_call", {{"name", "pick"}}},
                     {"max_tokens", 60},
                     {"temperature", 0}};
  json r = curl_post_json(server, "/v1/chat/completions", body);
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "function_call") << r.dump();
  EXPECT_FALSE(msg.contains("tool_calls")) << r.dump();
  ASSERT_TRUE(msg.contains("function_call")) << r.dump();
  EXPECT_EQ(msg["function_call"]["name"], "pick");
  const json args = json::parse(msg["function_call"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["color"] == "red" || args["color"] == "blue") << args;
  // Streamed: the name in the first delta.function_call, the arguments' pieces after it, the same call.
  json streamed = body;
  streamed["stream"] = true;
  const HttpReply s = http_request(server.port(), "POST", "/v1/chat/completions", streamed.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  std::string name, arguments, finish;
  for (const std::string& payload : sse_payloads(s.body)) {
    if (payload == "[DONE]") continue;
    const json chunk = json::parse(payload);
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("function_call")) {
      name += choice["delta"]["function_call"].value("name", "");
      arguments += choice["delta"]["function_call"].value("arguments", "");
    }
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(name, "pick");
  EXPECT_EQ(arguments, msg["function_call"]["arguments"].get<std::string>());
  EXPECT_EQ(finish, "function_call");
}

TEST(ServerStructuredTest, LogitBiasMinTokensAndStopTokenIdsOverCurl) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const json base = curl_post_json(server, "/v1/completions",
                                   {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_TRUE(base.contains("choices")) << base.dump();
  // Greedy's first token: the one after the prompt's in the tokens of prompt + text.
  const int num_prompt = base["usage"]["prompt_tokens"];
  const json tokens = curl_post_json(server, "/tokenize",
                                     {{"prompt", "Once upon a time" + base["choices"][0]["text"].get<std::string>()}});
  ASSERT_GT(int(tokens["tokens"].size()), num_prompt + 1) << tokens.dump();
  const int first = tokens["tokens"][size_t(num_prompt)];
  // Banning greedy's first token changes the first token.
  json r = curl_post_json(server, "/v1/completions",
                          {{"prompt", "Once upon a time"},
                           {"max_tokens", 6},
                           {"temperature", 0},
                           {"logit_bias", {{std::to_string(first), -100}}}});
  EXPECT_NE(r["choices"][0]["text"], base["choices"][0]["text"]) << r.dump();
  // The first token as a stop token: nothing comes out, finish "stop"; with min_tokens 3 it cannot end there.
  r = curl_post_json(
      server, "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"stop_token_ids", {first}}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], "") << r.dump();
  r = curl_post_json(server, "/v1/completions",
                     {{"prompt", "Once upon a time"},
                      {"max_tokens", 6},
                      {"temperature", 0},
                      {"stop_token_ids", {first}},
                      {"min_tokens", 3}});
  EXPECT_GE(r["usage"]["completion_tokens"].get<int>(), 3) << r.dump();
  r = curl_post_json(server, "/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"99999999", 1}}}});
  EXPECT_EQ(r["error"]["type"], "invalid_request_error") << r.dump();
}

// A grammar whose parses double with every byte (grammar_fuzz_test's): the matcher's work bound passes after a few
// dozen "a"s (nothing but "a" may come until then), and the request ends with an error that says so, never a silent end: a 400 error object
// for a whole response, an error event before [DONE] in a stream.
TEST(ServerStructuredTest, GrammarThatOverflowsEndsWithAnError) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string grammar =
      "root ::= s\ns ::= \"a\" s \"b\" | \"a\" t \"c\" | \"a\"{60} \"d\"\nt ::= s | \"a\"{60} \"e\"";
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"temperature", 0}, {"grammar", grammar}};
  json r = curl_post_json(server, "/v1/completions", body);
  ASSERT_TRUE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["error"]["type"], "invalid_request_error") << r.dump();
  EXPECT_EQ(r["error"]["code"], "grammar_cannot_continue") << r.dump();
  EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("too ambiguous")) << r.dump();
  const std::string dir = make_temp_dir();
  json streamed = body;
  streamed["stream"] = true;
  write_file(dir + "/body.json", streamed.dump());
  const std::string curl = "curl -s -N -o " + dir + "/out.txt -w '%{http_code}' http://127.0.0.1:" +
                           std::to_string(server.port()) +
                           "/v1/completions -H 'Content-Type: application/json' -d @" + dir + "/body.json";
  const std::string status = run_command(curl);
  const std::string sse = run_command("cat " + dir + "/out.txt");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, "200") << sse;  // the stream had started: its last event carries the error
  EXPECT_THAT(sse, HasSubstr("data: {\"error\"")) << sse;
  EXPECT_THAT(sse, HasSubstr("grammar_cannot_continue")) << sse;
  EXPECT_THAT(sse, HasSubstr("data: [DONE]")) << sse;
  // A plain request afterwards still runs: the server and its engine go on.
  r = curl_post_json(server, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3}});
  EXPECT_TRUE(r.contains("choices")) << r.dump();
}

}  // namespace
}  // namespace pagoda::e2e
