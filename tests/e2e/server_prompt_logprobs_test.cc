// Prompt logprobs through `pagoda serve` with the bundled model, as lm-evaluation-harness asks for them:
// /v1/completions with echo, logprobs and max_tokens 0 (and > 0), prompts as text, lists of text and token ids,
// streamed and not; vLLM's prompt_logprobs on completions and chat. The logprobs must be the model's: a greedy
// generation's logprobs of its tokens equal the echo's logprobs of the same tokens at the same positions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json post_json(const ServerProcess& s, const std::string& path, const json& body, int want_status = 200) {
  const HttpReply r = http_request(s.port(), "POST", path, body.dump());
  EXPECT_EQ(r.status, want_status) << body.dump() << "\n" << r.body;
  return json::parse(r.body, nullptr, false);
}

// Python's len() of UTF-8 text: its code points (what text_offset counts).
int32_t code_points(const std::string& s) {
  int32_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// An echo's logprobs object: one entry per token, the first unscored, the rest finite and <= 0, offsets that
// count the tokens' characters one after another.
void expect_echo_logprobs(const json& lp, size_t num_tokens, const std::string& what) {
  ASSERT_TRUE(lp.is_object()) << what;
  ASSERT_EQ(lp["tokens"].size(), num_tokens) << what;
  ASSERT_EQ(lp["token_logprobs"].size(), num_tokens) << what;
  ASSERT_EQ(lp["top_logprobs"].size(), num_tokens) << what;
  ASSERT_EQ(lp["text_offset"].size(), num_tokens) << what;
  EXPECT_TRUE(lp["token_logprobs"][0].is_null()) << what;
  EXPECT_TRUE(lp["top_logprobs"][0].is_null()) << what;
  int32_t offset = 0;
  for (size_t i = 0; i < num_tokens; ++i) {
    if (i > 0) {
      ASSERT_TRUE(lp["token_logprobs"][i].is_number()) << what << " token " << i;
      const double v = lp["token_logprobs"][i].get<double>();
      EXPECT_TRUE(std::isfinite(v) && v <= 0.0) << what << " token " << i << ": " << v;
    }
    EXPECT_EQ(lp["text_offset"][i], offset) << what << " token " << i;
    offset += code_points(lp["tokens"][i].get<std::string>());
  }
}

TEST(ServerPromptLogprobsTest, EchoWithMaxTokensZeroScoresEveryPromptShape) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string text = "Once upon a time, there was a little girl";
  const json tokenized = post_json(server, "/tokenize", {{"prompt", text}});
  const std::vector<int> ids = tokenized["tokens"].get<std::vector<int>>();
  ASSERT_GT(ids.size(), 5u);

  // One text prompt: the text comes back alone, one logprob entry per prompt token.
  json r = post_json(server, "/v1/completions",
                     {{"prompt", text}, {"echo", true}, {"logprobs", 3}, {"max_tokens", 0}, {"temperature", 0}});
  const json& c = r["choices"][0];
  EXPECT_EQ(c["text"], text);
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], ids.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  expect_echo_logprobs(c["logprobs"], ids.size(), "text prompt");
  std::string joined;
  for (const json& t : c["logprobs"]["tokens"]) joined += t.get<std::string>();
  EXPECT_EQ(joined, text);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LE(c["logprobs"]["top_logprobs"][i].size(), 3u);
  EXPECT_FALSE(c.contains("prompt_logprobs"));  // not asked for

  // Token ids, a list of texts and a list of token-id lists: the same logprobs for the same tokens.
  const json as_ids =
      post_json(server, "/v1/completions", {{"prompt", ids}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}});
  EXPECT_EQ(as_ids["choices"][0]["text"], text);
  expect_echo_logprobs(as_ids["choices"][0]["logprobs"], ids.size(), "token ids");
  const json lists =
      post_json(server, "/v1/completions",
                {{"prompt", json::array({text, "The cat sat"})}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}});
  ASSERT_EQ(lists["choices"].size(), 2u);
  expect_echo_logprobs(lists["choices"][0]["logprobs"], ids.size(), "list of texts");
  EXPECT_EQ(lists["choices"][1]["text"], "The cat sat");
  const json id_lists = post_json(server, "/v1/completions",
                                  {{"prompt", json::array({ids, json::array({ids[0], ids[1], ids[2]})})},
                                   {"echo", true},
                                   {"logprobs", 1},
                                   {"max_tokens", 0}});
  ASSERT_EQ(id_lists["choices"].size(), 2u);
  expect_echo_logprobs(id_lists["choices"][1]["logprobs"], 3, "list of token-id lists");
  for (size_t i = 1; i < ids.size(); ++i) {
    const double a = c["logprobs"]["token_logprobs"][i], b = as_ids["choices"][0]["logprobs"]["token_logprobs"][i];
    const double d = lists["choices"][0]["logprobs"]["token_logprobs"][i];
    const double e = id_lists["choices"][0]["logprobs"]["token_logprobs"][i];
    EXPECT_NEAR(a, b, 1e-5) << i;
    EXPECT_NEAR(a, d, 1e-5) << i;
    EXPECT_NEAR(a, e, 1e-5) << i;
  }

  // Without echo, max_tokens 0 asks for nothing: a 400 naming it.
  const json refused = post_json(server, "/v1/completions", {{"prompt", text}, {"max_tokens", 0}}, 400);
  EXPECT_EQ(refused["error"]["param"], "max_tokens");
}

TEST(ServerPromptLogprobsTest, EchoedLogprobsEqualTheGreedyGenerationsAtTheSamePositions) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string text = "Once upon a time";
  const std::vector<int> ids = post_json(server, "/tokenize", {{"prompt", text}})["tokens"].get<std::vector<int>>();
  const json gen =
      post_json(server, "/v1/completions",
                {{"prompt", ids}, {"max_tokens", 5}, {"temperature", 0}, {"logprobs", 2}, {"ignore_eos", true}});
  const json& glp = gen["choices"][0]["logprobs"];
  ASSERT_EQ(glp["token_logprobs"].size(), 5u) << gen.dump();
  const std::string generated = gen["choices"][0]["text"];
  EXPECT_EQ(glp["text_offset"][0], 0);  // without echo the offsets count from the completion's start
  EXPECT_EQ(glp["text_offset"][1], code_points(glp["tokens"][0].get<std::string>()));

  // Echo with max_tokens 5: the prompt's entries, then the same generation's, offsets continuing.
  const json echo_gen = post_json(
      server, "/v1/completions",
      {{"prompt", ids}, {"max_tokens", 5}, {"temperature", 0}, {"logprobs", 2}, {"ignore_eos", true}, {"echo", true}});
  const json& elp = echo_gen["choices"][0]["logprobs"];
  EXPECT_EQ(echo_gen["choices"][0]["text"], text + generated);
  expect_echo_logprobs(elp, ids.size() + 5, "echo with max_tokens 5");
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(elp["tokens"][ids.size() + i], glp["tokens"][i]);
    EXPECT_NEAR(elp["token_logprobs"][ids.size() + i].get<double>(), glp["token_logprobs"][i].get<double>(), 1e-4);
  }

  // The prompt and its greedy continuation as token ids (as lm-eval sends a context and its continuation),
  // scored with max_tokens 0: at each of the 5 positions, the logprob the generation drew its token with.
  const std::vector<int> all =
      post_json(server, "/tokenize", {{"prompt", text + generated}})["tokens"].get<std::vector<int>>();
  ASSERT_EQ(all.size(), ids.size() + 5) << "the greedy continuation retokenizes differently";
  ASSERT_TRUE(std::equal(ids.begin(), ids.end(), all.begin()));
  const json scored =
      post_json(server, "/v1/completions", {{"prompt", all}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}});
  const json& slp = scored["choices"][0]["logprobs"];
  EXPECT_EQ(scored["choices"][0]["text"], text + generated);
  expect_echo_logprobs(slp, all.size(), "prompt + generation");
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(slp["token_logprobs"][ids.size() + i].get<double>(), glp["token_logprobs"][i].get<double>(), 1e-4) << i;
    // Greedy: each generated token was the most likely there.
    const json& top = slp["top_logprobs"][ids.size() + i];
    double best = -1e30;
    for (const auto& [token, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(best, slp["token_logprobs"][ids.size() + i].get<double>(), 1e-6) << top.dump();
  }
  for (size_t i = 1; i < all.size(); ++i)
    EXPECT_NEAR(slp["token_logprobs"][i].get<double>(), elp["token_logprobs"][i].get<double>(), 1e-4) << i;
}

TEST(ServerPromptLogprobsTest, NonAsciiTextOffsetsCountCodePointsOfTheEchoedText) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  // Multi-byte characters: in the bundled model's 512-token vocabulary the accented letter and the euro sign are
  // tokens of their own, the emoji four byte-fallback tokens (pieces of a character, U+FFFD in JSON).
  const std::string text = "Caf\xc3\xa9 \xe2\x82\xac 5 \xf0\x9f\x98\x80 ok";
  ASSERT_EQ(code_points(text), 13);
  const json r =
      post_json(server, "/v1/completions", {{"prompt", text}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}});
  const json& c = r["choices"][0];
  EXPECT_EQ(c["text"], text);
  const json& lp = c["logprobs"];
  const std::vector<int> ids = post_json(server, "/tokenize", {{"prompt", text}})["tokens"].get<std::vector<int>>();
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  // The text as code points, indexed as Python indexes a str.
  std::vector<std::string> chars;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) chars.emplace_back();
    chars.back() += text[i];
  }
  const std::string replacement = "\xef\xbf\xbd";
  int32_t prev = 0, num_pieces = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t offset = lp["text_offset"][i];
    const std::string token = lp["tokens"][i];
    EXPECT_GE(offset, prev) << i;
    prev = offset;
    if (token.find(replacement) != std::string::npos) {  // a piece of a character: that character's offset
      ++num_pieces;
      ASSERT_LT(size_t(offset), chars.size()) << i;
      EXPECT_GT(chars[size_t(offset)].size(), 1u) << "token " << i << " at " << offset;
      continue;
    }
    // A whole token sits at its offset in the echoed text.
    std::string at;
    for (int32_t k = offset; k < offset + code_points(token) && size_t(k) < chars.size(); ++k) at += chars[size_t(k)];
    EXPECT_EQ(at, token) << "token " << i << " at " << offset;
  }
  EXPECT_GE(num_pieces, 2) << lp.dump();  // the test means byte tokens: the vocabulary has them for these
}

TEST(ServerPromptLogprobsTest, StreamedEchoCarriesThePromptLogprobsInTheFirstChunk) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string text = "Once upon a time";
  const json whole =
      post_json(server, "/v1/completions",
                {{"prompt", text}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 4}, {"temperature", 0}});
  const HttpReply r = http_request(
      server.port(), "POST", "/v1/completions",
      json{{"prompt", text}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 4}, {"temperature", 0}, {"stream", true}}
          .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  events.pop_back();
  std::string streamed_text;
  json tokens = json::array(), logprobs = json::array(), offsets = json::array();
  for (const std::string& e : events) {
    const json chunk = json::parse(e);
    const json& c = chunk["choices"][0];
    streamed_text += c["text"].get<std::string>();
    for (size_t i = 0; i < c["logprobs"]["tokens"].size(); ++i) {
      tokens.push_back(c["logprobs"]["tokens"][i]);
      logprobs.push_back(c["logprobs"]["token_logprobs"][i]);
      offsets.push_back(c["logprobs"]["text_offset"][i]);
    }
  }
  const json first = json::parse(events.front())["choices"][0];
  EXPECT_EQ(first["text"].get<std::string>().rfind(text, 0), 0u) << first.dump();  // the prompt comes first
  EXPECT_TRUE(first["logprobs"]["token_logprobs"][0].is_null());
  const json& wlp = whole["choices"][0]["logprobs"];
  EXPECT_EQ(streamed_text, whole["choices"][0]["text"]);
  EXPECT_EQ(tokens, wlp["tokens"]);
  EXPECT_EQ(offsets, wlp["text_offset"]);  // continuous across chunks
  ASSERT_EQ(logprobs.size(), wlp["token_logprobs"].size());
  for (size_t i = 1; i < logprobs.size(); ++i)
    EXPECT_NEAR(logprobs[i].get<double>(), wlp["token_logprobs"][i].get<double>(), 1e-5);
  // A stream cannot carry vLLM's prompt_logprobs (vLLM refuses it too).
  const json refused =
      post_json(server, "/v1/completions", {{"prompt", text}, {"prompt_logprobs", 1}, {"stream", true}}, 400);
  EXPECT_EQ(refused["error"]["param"], "prompt_logprobs");
}

TEST(ServerPromptLogprobsTest, VllmPromptLogprobsOnCompletionsAndChat) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string text = "Once upon a time";
  const std::vector<int> ids = post_json(server, "/tokenize", {{"prompt", text}})["tokens"].get<std::vector<int>>();
  const json echo =
      post_json(server, "/v1/completions", {{"prompt", text}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}});
  const json r = post_json(server, "/v1/completions",
                           {{"prompt", text}, {"prompt_logprobs", 2}, {"max_tokens", 2}, {"temperature", 0}, {"n", 2}});
  ASSERT_EQ(r["choices"].size(), 2u);
  for (const json& c : r["choices"]) {
    const json& plp = c["prompt_logprobs"];
    ASSERT_EQ(plp.size(), ids.size()) << c.dump();
    EXPECT_TRUE(plp[0].is_null());
    for (size_t i = 1; i < ids.size(); ++i) {
      const std::string id = std::to_string(ids[i]);
      ASSERT_TRUE(plp[i].contains(id)) << plp[i].dump();
      // The prompt's token, with its rank, and the 2 most likely (the prompt's token among them or not).
      EXPECT_GE(plp[i].size(), 2u);
      EXPECT_LE(plp[i].size(), 3u);
      EXPECT_NEAR(plp[i][id]["logprob"].get<double>(),
                  echo["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(), 1e-5);
      EXPECT_GE(plp[i][id]["rank"].get<int>(), 1);
      EXPECT_TRUE(plp[i][id]["decoded_token"].is_string());
      int num_rank_one = 0;
      for (const auto& [key, entry] : plp[i].items()) num_rank_one += entry["rank"] == 1 ? 1 : 0;
      EXPECT_GE(num_rank_one, 1) << plp[i].dump();
    }
    EXPECT_EQ(c["logprobs"], nullptr);  // logprobs not asked for
  }
  // Chat: once per response, for the rendered prompt.
  const json chat = post_json(
      server, "/v1/chat/completions",
      {{"messages", json::array({{{"role", "user"}, {"content", text}}})}, {"prompt_logprobs", 0}, {"max_tokens", 2}});
  ASSERT_TRUE(chat["prompt_logprobs"].is_array()) << chat.dump();
  EXPECT_EQ(chat["prompt_logprobs"].size(), chat["usage"]["prompt_tokens"]);
  EXPECT_TRUE(chat["prompt_logprobs"][0].is_null());
  for (size_t i = 1; i < chat["prompt_logprobs"].size(); ++i) EXPECT_EQ(chat["prompt_logprobs"][i].size(), 1u);

  // The work bound counts the prompt's entries: a prompt scored with 20 alternatives is over a small limit.
  ServerProcess small({"--max-request-tokens", "64"});
  ASSERT_TRUE(small.started()) << small.log();
  const json over = post_json(small, "/v1/completions",
                              {{"prompt", text + text + text}, {"prompt_logprobs", 20}, {"max_tokens", 1}}, 400);
  EXPECT_EQ(over["error"]["param"], "prompt_logprobs");
  EXPECT_THAT(over["error"]["message"].get<std::string>(), HasSubstr("--max-request-tokens"));
  const json echo_over =
      post_json(small, "/v1/completions",
                {{"prompt", text + text + text}, {"echo", true}, {"logprobs", 20}, {"max_tokens", 0}}, 400);
  EXPECT_EQ(echo_over["error"]["param"], "logprobs");
  // Chat scores its prompt once whatever n: n = 8 with a prompt of P tokens costs P + 8 x 2, not 8 P.
  const json chat_n = post_json(small, "/v1/chat/completions",
                                {{"messages", json::array({{{"role", "user"}, {"content", text + text + text}}})},
                                 {"prompt_logprobs", 0},
                                 {"n", 8},
                                 {"max_tokens", 2}});
  const int64_t prompt_tokens = chat_n["usage"]["prompt_tokens"];
  EXPECT_GT(prompt_tokens * 8 + 16, 64);  // over the limit if the prompt were counted per choice
  EXPECT_EQ(chat_n["prompt_logprobs"].size(), size_t(prompt_tokens));
}

}  // namespace
}  // namespace pagoda::e2e
