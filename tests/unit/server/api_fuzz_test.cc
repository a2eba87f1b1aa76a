// The OpenAI API's request path in this process (HttpServer, ApiServer, a real Engine on the bundled model), fuzzed
// with type-confused bodies: every field of every endpoint set to each JSON type and to edge values, and valid
// bodies with bytes flipped. Under ASan+UBSan in `make test`. Nothing may crash, nothing may be a 500, every
// error is an OpenAI error object, and /health answers afterwards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "in_process_server.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using raw_http::http_request;
using raw_http::HttpReply;

// Values of every JSON type, and edge values of the right types.
std::vector<json> confusing_values() {
  return {nullptr,
          true,
          false,
          0,
          -1,
          1,
          7,
          int64_t(1) << 40,
          uint64_t(1) << 63,
          -9223372036854775807LL - 1,
          0.5,
          -2.5,
          1e300,
          "",
          "text",
          "\xff\xfe",
          json::array(),
          json::array({1, 2}),
          json::array({"a", nullptr}),
          json::array({json::object()}),
          json::object(),
          json::object({{"type", 5}}),
          json::object({{"type", "text"}, {"text", json::array()}})};
}

// Every path to a value inside `j` (objects' keys and arrays' first elements), as JSON pointers.
void collect_paths(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>* out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      out->push_back(at / key);
      collect_paths(value, at / key, out);
    }
  } else if (j.is_array() && !j.empty()) {
    out->push_back(at / 0);
    collect_paths(j[0], at / 0, out);
  }
}

struct Endpoint {
  std::string path;
  json body;
};

std::vector<Endpoint> endpoints() {
  return {
      {"/v1/completions",
       {{"model", "stories260K"},
        {"prompt", json::array({"Once upon a time", "The cat"})},
        {"max_tokens", 2},
        {"temperature", 0.7},
        {"top_p", 0.9},
        {"top_k", 5},
        {"min_p", 0.05},
        {"n", 2},
        {"stop", json::array({"x"})},
        {"seed", 3},
        {"logprobs", 2},
        {"echo", true},
        {"presence_penalty", 0.1},
        {"frequency_penalty", 0.1},
        {"repetition_penalty", 1.1},
        {"ignore_eos", false},
        {"stream", true},
        {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}}},
      {"/v1/chat/completions",
       {{"model", "stories260K"},
        {"messages", json::array({{{"role", "system"}, {"content", "Be brief."}},
                                  {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Hi"}}})}}})},
        {"max_tokens", 2},
        {"max_completion_tokens", 2},
        {"logprobs", true},
        {"top_logprobs", 2},
        {"prompt_logprobs", 1},
        {"add_generation_prompt", true},
        {"stream", false}}},
      {"/v1/embeddings",
       {{"model", "stories260K"},
        {"input", json::array({"Once upon a time", "The cat"})},
        {"encoding_format", "base64"},
        {"dimensions", 64},
        {"normalize", true},
        {"user", "u"}}},
      {"/v1/embeddings", {{"input", json::array({json::array({1, 2, 3}), json::array({4, 5})})}}},
      {"/v1/messages",
       {{"model", "stories260K"},
        {"max_tokens", 2},
        {"system", json::array({{{"type", "text"}, {"text", "Be brief."}}})},
        {"messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Hi"}}})}}})},
        {"temperature", 0.5},
        {"top_p", 0.9},
        {"top_k", 5},
        {"stop_sequences", json::array({"x"})},
        {"metadata", {{"user_id", "u"}}},
        {"stream", true}}},
      {"/v1/responses",
       {{"model", "stories260K"},
        {"instructions", "Be brief."},
        {"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "Hi"}}})}},
                               {{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}},
                               {{"type", "function_call_output"}, {"call_id", "c"}, {"output", "1"}}})},
        {"max_output_tokens", 2},
        {"temperature", 0.5},
        {"top_p", 0.9},
        {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "object"}}}}}}},
        {"stream", true}}},
      {"/tokenize", {{"prompt", "Once upon a time"}, {"add_special_tokens", true}}},
      {"/tokenize", {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}}},
      {"/detokenize", {{"tokens", json::array({1, 2, 3})}}},
  };
}

void expect_api_answer(const HttpReply& r, const std::string& what) {
  static const std::set<int> allowed = {200, 400, 404, 408, 413, 429, 503};
  ASSERT_TRUE(allowed.count(r.status)) << r.status << " for " << what << "\n" << r.raw.substr(0, 500);
  if (r.status == 200) return;
  const json body = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error") && body["error"]["message"].is_string()) << what << "\n"
                                                                                                  << r.body;
}

TEST(ApiFuzzTest, TypeConfusedBodiesGetOpenAiErrorsNeverA500) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  int num_requests = 0;
  for (const Endpoint& e : endpoints()) {
    std::vector<json::json_pointer> paths;
    collect_paths(e.body, json::json_pointer(), &paths);
    for (const json::json_pointer& p : paths) {
      for (const json& v : confusing_values()) {
        json body = e.body;
        body[p] = v;
        const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
        expect_api_answer(http_request(server.port(), "POST", e.path, text), e.path + " " + text);
        ++num_requests;
      }
      json without = e.body;  // the field left out
      json& parent = without.at(p.parent_pointer());
      if (parent.is_object()) {
        parent.erase(p.back());
      } else {
        parent.erase(0);
      }
      expect_api_answer(http_request(server.port(), "POST", e.path, without.dump()), e.path + " " + without.dump());
    }
    // The whole body as each type.
    for (const json& v : confusing_values())
      expect_api_answer(
          http_request(server.port(), "POST", e.path, v.dump(-1, ' ', false, json::error_handler_t::replace)),
          e.path + " " + v.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  EXPECT_GT(num_requests, 900);
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
}

TEST(ApiFuzzTest, MutatedBodiesGetOpenAiErrorsNeverA500) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  std::mt19937 rng(20261204);
  const std::vector<Endpoint> eps = endpoints();
  for (int i = 0; i < 1500; ++i) {
    const Endpoint& e = eps[rng() % eps.size()];
    std::string body = e.body.dump();
    for (int k = 0, n = 1 + int(rng() % 3); k < n && !body.empty(); ++k) {
      const size_t pos = rng() % body.size();
      switch (rng() % 4) {
        case 0: body[pos] = char(rng() % 256); break;
        case 1: body.resize(pos); break;
        case 2: body.insert(pos, body.substr(pos, rng() % 16)); break;
        default: body.erase(pos, 1 + rng() % 4); break;
      }
    }
    expect_api_answer(http_request(server.port(), "POST", e.path, body), e.path + " " + body);
  }
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
}

}  // namespace
}  // namespace pagoda::server
