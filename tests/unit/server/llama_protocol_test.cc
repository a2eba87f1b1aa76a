// llama-server's /completion: parsing (its field names, defaults, n_predict -1, seed -1, n_probs, grammar and
// json_schema, logit_bias pairs, fields accepted only at their neutral value, unknown fields refused by name), the
// stop types, completion_probabilities, /props and /slots, /infill's prompt; the writer's events and whole answer;
// /infill through the in-process server, with and without the model's fill-in-the-middle tokens.
#include "server/llama_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "in_process_server.h"
#include "server/llama_writer.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

LlamaCompletionRequest parse_ok(const json& body) {
  LlamaCompletionRequest r;
  std::optional<ApiError> e = parse_llama_completion(body.dump(), &r);
  EXPECT_FALSE(e.has_value()) << body.dump() << " -> " << (e ? e->message : "");
  return r;
}

ApiError parse_error(const json& body) {
  LlamaCompletionRequest r;
  std::optional<ApiError> e = parse_llama_completion(body.dump(), &r);
  EXPECT_TRUE(e.has_value()) << body.dump();
  return e.value_or(ApiError{});
}

TEST(LlamaProtocolTest, ParsesLlamaServersFieldsWithItsDefaults) {
  LlamaCompletionRequest r = parse_ok({{"prompt", "I believe"}, {"n_predict", 8}});
  EXPECT_FALSE(r.params.chat);
  ASSERT_EQ(r.params.prompts.size(), 1u);
  EXPECT_EQ(r.params.prompts[0].text, "I believe");
  EXPECT_TRUE(r.params.max_tokens_given);
  EXPECT_EQ(r.params.sampling.max_tokens, 8);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, kLlamaTemperature);
  EXPECT_EQ(r.params.sampling.top_k, kLlamaTopK);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, kLlamaTopP);
  EXPECT_FLOAT_EQ(r.params.sampling.min_p, kLlamaMinP);
  EXPECT_FALSE(r.params.stream);
  r = parse_ok({{"prompt", {1, 2, 3}},
                {"n_predict", -1},
                {"seed", -1},
                {"temperature", 0},
                {"repeat_penalty", 1.1},
                {"stop", {"\n"}},
                {"n_probs", 3},
                {"stream", true},
                {"cache_prompt", true},
                {"id_slot", -1},
                {"return_tokens", true},
                {"typical_p", 1.0},
                {"mirostat", 0}});
  EXPECT_EQ(r.params.prompts[0].tokens, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_FALSE(r.params.max_tokens_given);
  EXPECT_FALSE(r.params.sampling.seed.has_value());
  EXPECT_FLOAT_EQ(r.params.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r.n_probs, 3);
  EXPECT_EQ(r.params.logprobs, 3);
  EXPECT_TRUE(r.return_tokens);
  EXPECT_TRUE(r.params.stream);
}

TEST(LlamaProtocolTest, ConstraintsAndLogitBias) {
  LlamaCompletionRequest r = parse_ok({{"prompt", "x"}, {"grammar", "root ::= \"yes\" | \"no\""}});
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->spec.kind, grammar::GrammarSpec::Kind::kGbnf);
  r = parse_ok({{"prompt", "x"}, {"json_schema", {{"type", "object"}}}});
  ASSERT_TRUE(r.params.constraint);
  EXPECT_EQ(r.params.constraint->spec.kind, grammar::GrammarSpec::Kind::kJsonSchema);
  r = parse_ok({{"prompt", "x"}, {"logit_bias", {{5, -1.5}, {7, false}}}});
  ASSERT_EQ(r.params.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.params.sampling.logit_bias[1], (std::pair<TokenId, float>{7, -100.0f}));
}

TEST(LlamaProtocolTest, WhatCannotApplyIsRefusedByName) {
  EXPECT_EQ(parse_error({{"prompt", "x"}, {"id_slot", 2}}).param, "id_slot");
  EXPECT_EQ(parse_error({{"prompt", "x"}, {"mirostat", 2}}).param, "mirostat");
  EXPECT_EQ(parse_error({{"prompt", "x"}, {"samplers", {"top_k"}}}).param, "samplers");
  EXPECT_EQ(parse_error({{"prompt", "x"}, {"n_predict", 0}}).param, "n_predict");
  EXPECT_EQ(parse_error({{"prompt", {"a", "b"}}}).param, "prompt");
  EXPECT_EQ(parse_error({{"n_predict", 4}}).param, "prompt");
  const ApiError e = parse_error({{"prompt", "x"}, {"repeat_penalty", -1}});
  EXPECT_THAT(e.message, HasSubstr("'repeat_penalty'"));
}

TEST(LlamaProtocolTest, StopTypesPropsAndSlots) {
  EXPECT_EQ(llama_stop_type(FinishReason::kLength, ""), "limit");
  EXPECT_EQ(llama_stop_type(FinishReason::kStop, ""), "eos");
  EXPECT_EQ(llama_stop_type(FinishReason::kStop, "\n"), "word");
  LlamaServerFacts f;
  f.model_path = "/m/model.gguf";
  f.total_slots = 4;
  f.n_ctx = 512;
  f.busy_slots = 1;
  const json props = json::parse(llama_props_json(f));
  EXPECT_EQ(props["total_slots"], 4);
  EXPECT_EQ(props["model_path"], "/m/model.gguf");
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 512);
  EXPECT_EQ(props["default_generation_settings"]["params"]["n_predict"], -1);
  const json slots = json::parse(llama_slots_json(f));
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots[0]["is_processing"], true);
  EXPECT_EQ(slots[1]["is_processing"], false);
  EXPECT_FALSE(slots[0].contains("params"));
}

TEST(LlamaWriterTest, StreamsPiecesThenAStopEventAndAWholeAnswer) {
  SamplingParams s;
  IdGenerator ids;
  LlamaWriter w(ids, "m", llama_generation_settings(s, 0, true), "I believe", true, true);
  EXPECT_EQ(w.stream_open(5), "");
  ChoiceResult piece;
  piece.text = "the";
  piece.token_ids = {42};
  piece.logprobs = {TokenLogprobInfo{"the", -0.5f, {{"a", -1.0f, 7}}, 0, 42}};
  const std::string first = w.stream_piece(piece, true, std::nullopt);
  ASSERT_TRUE(first.starts_with("data: "));
  const json p = json::parse(first.substr(6));
  EXPECT_EQ(p["content"], "the");
  EXPECT_EQ(p["tokens"], json({42}));
  EXPECT_EQ(p["stop"], false);
  EXPECT_EQ(p["tokens_predicted"], 1);
  EXPECT_EQ(p["tokens_evaluated"], 5);
  EXPECT_EQ(p["completion_probabilities"][0]["id"], 42);
  EXPECT_EQ(p["completion_probabilities"][0]["top_logprobs"][0]["id"], 7);
  ChoiceResult last;
  last.finish_reason = FinishReason::kLength;
  const std::string end = w.stream_close(nullptr, UsageFigures{5, 1, 0, 0, 2.0}, last);
  EXPECT_THAT(end, ::testing::Not(HasSubstr("[DONE]")));
  const json e = json::parse(end.substr(6));
  EXPECT_EQ(e["stop"], true);
  EXPECT_EQ(e["stop_type"], "limit");
  EXPECT_EQ(e["timings"]["prompt_n"], 5);
  EXPECT_EQ(e["timings"]["predicted_n"], 1);
  EXPECT_TRUE(e.contains("generation_settings"));
  ChoiceResult whole = piece;
  whole.finish_reason = FinishReason::kStop;
  const json body = json::parse(w.whole_response({whole}, UsageFigures{5, 1, 0, 0, 2.0}));
  EXPECT_EQ(body["content"], "the");
  EXPECT_EQ(body["tokens"], json({42}));
  EXPECT_EQ(body["stop_type"], "eos");
  EXPECT_EQ(body["prompt"], "I believe");
  EXPECT_EQ(body["completion_probabilities"].size(), 1u);
}

TEST(LlamaProtocolTest, InfillBuildsThePrefixSuffixMiddlePrompt) {
  std::string prefix, suffix, body;
  ASSERT_FALSE(split_llama_infill(
      json({{"input_prefix", "def f():"}, {"input_suffix", "return x"}, {"input_extra", json::array()}, {"n_predict", 4}})
          .dump(),
      &prefix, &suffix, &body));
  EXPECT_EQ(prefix, "def f():");
  EXPECT_EQ(suffix, "return x");
  EXPECT_EQ(json::parse(body), json({{"n_predict", 4}, {"prompt", ""}}));
  EXPECT_TRUE(split_llama_infill(json({{"input_extra", {{{"text", "x"}}}}}).dump(), &prefix, &suffix, &body));
  FimTokens fim{7, 8, 9};
  EXPECT_EQ(llama_infill_tokens(fim, 1, {10, 11}, {12}, {13}), (std::vector<TokenId>{1, 7, 10, 11, 8, 12, 9, 13}));
  EXPECT_EQ(FimTokens{}.missing(), "fim_pre, fim_suf, fim_mid");
  EXPECT_EQ((FimTokens{7, std::nullopt, 9}.missing()), "fim_suf");
}

TEST(LlamaEndpointTest, InfillAndCompletionsSuffixNeedTheModelsFimTokens) {
  {
    InProcessServer server;  // the bundled model has none
    ASSERT_TRUE(server.started());
    const raw_http::HttpReply r = raw_http::http_request(server.port(), "POST", "/infill",
                                                         json({{"input_prefix", "a"}, {"input_suffix", "b"}}).dump());
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body, HasSubstr("missing: fim_pre, fim_suf, fim_mid"));
    const raw_http::HttpReply suffix = raw_http::http_request(
        server.port(), "POST", "/v1/completions", json({{"prompt", "a"}, {"suffix", "b"}}).dump());
    EXPECT_EQ(suffix.status, 400);
    EXPECT_EQ(json::parse(suffix.body)["error"]["param"], "suffix");
  }
  ApiServerOptions api;
  api.fim = FimTokens{3, 4, 5};  // stand-ins: the prompt's shape is what is checked
  InProcessServer server({}, api);
  ASSERT_TRUE(server.started());
  const raw_http::HttpReply r = raw_http::http_request(
      server.port(), "POST", "/infill",
      json({{"input_prefix", "Once upon"}, {"input_suffix", "the end"}, {"n_predict", 3}, {"temperature", 0}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const raw_http::HttpReply tok = raw_http::http_request(server.port(), "POST", "/tokenize",
                                                         json({{"content", "Once upon"}}).dump());
  const raw_http::HttpReply tok2 = raw_http::http_request(server.port(), "POST", "/tokenize",
                                                          json({{"content", "the end"}}).dump());
  const size_t expected = 1 + 3 + json::parse(tok.body)["tokens"].size() + json::parse(tok2.body)["tokens"].size();
  EXPECT_EQ(json::parse(r.body)["tokens_evaluated"], expected);  // BOS, the three FIM tokens, prefix and suffix
  EXPECT_EQ(json::parse(r.body)["tokens_predicted"], 3);
  // OpenAI completions' suffix builds the same prompt, the prompt being the prefix.
  const raw_http::HttpReply c = raw_http::http_request(
      server.port(), "POST", "/v1/completions",
      json({{"prompt", "Once upon"}, {"suffix", "the end"}, {"max_tokens", 3}, {"temperature", 0}}).dump());
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body)["usage"]["prompt_tokens"], expected);
  EXPECT_EQ(json::parse(c.body)["choices"][0]["text"], json::parse(r.body)["content"]);
}

}  // namespace
}  // namespace pagoda::server
