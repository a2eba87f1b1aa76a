// The embeddings API's parsing (every input shape, each field's type and range, the error's param), L2
// normalization, base64 of f32, the response's shape; and /v1/embeddings through the in-process server: the
// vectors equal the engine's own pooling request's, normalized, in float and base64 alike. llama-server's
// /embedding: "input" or "content", embd_normalize's norms, its array response, through the server too.
#include "server/embeddings_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "in_process_server.h"
#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

EmbeddingParams parse_embedding_ok(const std::string& body) {
  EmbeddingParams p;
  std::optional<ApiError> e = parse_embedding_params(body, &p);
  EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->message : "");
  return p;
}

ApiError parse_embedding_error(const std::string& body) {
  EmbeddingParams p;
  std::optional<ApiError> e = parse_embedding_params(body, &p);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(EmbeddingsProtocolTest, EveryInputShape) {
  EmbeddingParams one = parse_embedding_ok(R"({"input": "hello", "model": "m"})");
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_EQ(one.model, "m");
  EXPECT_EQ(one.encoding, EmbeddingEncoding::kFloat);
  EXPECT_TRUE(one.normalize);
  EmbeddingParams texts = parse_embedding_ok(R"({"input": ["a", "b", "c"]})");
  ASSERT_EQ(texts.inputs.size(), 3u);
  EXPECT_EQ(texts.inputs[2].text, "c");
  EmbeddingParams ids = parse_embedding_ok(R"({"input": [1, 2, 3]})");
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_FALSE(ids.inputs[0].text);
  EXPECT_EQ(ids.inputs[0].tokens, (std::vector<TokenId>{1, 2, 3}));
  EmbeddingParams id_lists = parse_embedding_ok(R"({"input": [[1, 2], [3]]})");
  ASSERT_EQ(id_lists.inputs.size(), 2u);
  EXPECT_EQ(id_lists.inputs[1].tokens, (std::vector<TokenId>{3}));
}

TEST(EmbeddingsProtocolTest, FieldsAndTheirErrors) {
  EXPECT_EQ(parse_embedding_ok(R"({"input": "a", "encoding_format": "base64"})").encoding, EmbeddingEncoding::kBase64);
  EXPECT_EQ(parse_embedding_ok(R"({"input": "a", "dimensions": 64})").dimensions, 64);
  EXPECT_FALSE(parse_embedding_ok(R"({"input": "a", "normalize": false})").normalize);
  parse_embedding_ok(R"({"input": "a", "user": "someone", "encoding_format": null})");

  EXPECT_EQ(parse_embedding_error(R"({"model": "m"})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": ""})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": []})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": [[]]})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": [-1]})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": [1.5]})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": ["a", 3]})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": {"text": "a"}})").param, "input");
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "encoding_format": "int8"})").param, "encoding_format");
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "dimensions": 0})").param, "dimensions");
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "dimensions": "64"})").param, "dimensions");
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "normalize": 1})").param, "normalize");
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "model": 3})").param, "model");
  // Known elsewhere but not implemented here, and unknown: both name the field.
  const ApiError truncate = parse_embedding_error(R"({"input": "a", "truncate_prompt_tokens": 5})");
  EXPECT_EQ(truncate.param, "truncate_prompt_tokens");
  EXPECT_THAT(truncate.message, HasSubstr("not supported"));
  EXPECT_EQ(parse_embedding_error(R"({"input": "a", "pooling": "mean"})").param, "pooling");
  json many = {{"input", json::array()}};
  for (int i = 0; i <= kMaxEmbeddingInputs; ++i) many["input"].push_back("x");
  EXPECT_THAT(parse_embedding_error(many.dump()).message, HasSubstr("at most 2048"));
}

TEST(EmbeddingsProtocolTest, NormalizationAndBase64) {
  std::vector<float> v = {3.0f, 4.0f};
  l2_normalize(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> zero = {0.0f, 0.0f};
  l2_normalize(zero);
  EXPECT_EQ(zero, (std::vector<float>{0.0f, 0.0f}));
  // 1.0f is 00 00 80 3f little-endian; 2.0f is 00 00 00 40: "AACAPwAAAEA=".
  EXPECT_EQ(base64_f32({1.0f, 2.0f}), "AACAPwAAAEA=");
  EXPECT_EQ(base64_f32({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_f32({}), "");
}

TEST(EmbeddingsProtocolTest, ResponseShape) {
  const json r = json::parse(embeddings_response({{0.5f, -0.25f}, {1.0f, 0.0f}}, EmbeddingEncoding::kFloat, "m", 7));
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "m");
  ASSERT_EQ(r["data"].size(), 2u);
  EXPECT_EQ(r["data"][1]["object"], "embedding");
  EXPECT_EQ(r["data"][1]["index"], 1);
  EXPECT_EQ(r["data"][0]["embedding"], json::array({0.5, -0.25}));
  EXPECT_EQ(r["usage"], json({{"prompt_tokens", 7}, {"total_tokens", 7}}));
  const json b = json::parse(embeddings_response({{1.0f, 2.0f}}, EmbeddingEncoding::kBase64, "m", 1));
  EXPECT_EQ(b["data"][0]["embedding"], "AACAPwAAAEA=");
}

TEST(EmbeddingsProtocolTest, LlamaServersEmbeddingRequestNormsAndResponse) {
  EmbeddingParams p;
  ASSERT_FALSE(parse_llama_embedding_params(R"({"content": ["a", "b"], "embd_normalize": -1})", &p));
  EXPECT_EQ(p.api, EmbeddingParams::Api::kLlama);
  EXPECT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.embd_normalize, -1);
  ASSERT_FALSE(parse_llama_embedding_params(R"({"input": [1, 2, 3]})", &p));
  EXPECT_EQ(p.inputs[0].tokens, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(p.embd_normalize, 2);
  for (const char* bad :
       {R"({})", R"({"input": "a", "embd_normalize": -2})", R"({"input": "a", "embd_normalize": 1.5})",
        R"({"input": "a", "encoding_format": "base64"})", R"({"input": "a", "dimensions": 2})"}) {
    std::optional<ApiError> e = parse_llama_embedding_params(bad, &p);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_TRUE(e->param.has_value()) << bad;
  }
  // llama.cpp's common_embd_normalize: none, max-abs to 32760, taxicab, Euclidean, the 3-norm.
  const std::vector<float> v = {3.0f, -4.0f};
  auto normed = [&](int32_t n) {
    std::vector<float> w = v;
    llama_embd_normalize(w, n);
    return w;
  };
  EXPECT_EQ(normed(-1), v);
  EXPECT_FLOAT_EQ(normed(0)[1], -32760.0f);
  EXPECT_FLOAT_EQ(normed(1)[0], 3.0f / 7.0f);
  EXPECT_FLOAT_EQ(normed(2)[0], 0.6f);
  EXPECT_NEAR(normed(3)[1], -4.0 / std::cbrt(91.0), 1e-6);
  std::vector<float> zero = {0.0f, 0.0f};
  llama_embd_normalize(zero, 2);
  EXPECT_EQ(zero, (std::vector<float>{0.0f, 0.0f}));
  const json r = json::parse(llama_embedding_response({{0.5f, -0.25f}, {1.0f, 0.0f}}));
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1]["index"], 1);
  EXPECT_EQ(r[0]["embedding"], json::array({json::array({0.5, -0.25})}));
}

std::vector<float> decode_base64_f32(const std::string& s) {
  std::vector<uint8_t> bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    acc = acc << 6 | uint32_t(std::strchr(alphabet, c) - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(uint8_t(acc >> bits));
    }
  }
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

TEST(EmbeddingsEndpointTest, VectorsAreTheEnginesPoolingNormalizedInFloatAndBase64) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat", "Lily"};
  const json body = {{"input", texts}, {"model", "stories260K"}};
  const raw_http::HttpReply r = raw_http::http_request(server.port(), "POST", "/v1/embeddings", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j["data"].size(), texts.size());
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    // The engine's own answer (last-token pooling, the server's default), normalized here.
    GenerateRequest req;
    req.prompt = server.tokenizer().encode(texts[i], true);
    prompt_tokens += int64_t(req.prompt.size());
    req.prefill_only = true;
    req.pooling = Pooling::kLast;
    std::vector<float> want = server.engine().submit(std::move(req))->stream->wait_all().embedding;
    l2_normalize(want);
    const std::vector<float> got = j["data"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), 64u);
    double norm = 0.0;
    for (size_t d = 0; d < got.size(); ++d) {
      EXPECT_NEAR(got[d], want[d], 1e-6) << "input " << i << ", dimension " << d;
      norm += double(got[d]) * got[d];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt_tokens);

  const json b64 = {{"input", texts[0]}, {"encoding_format", "base64"}};
  const raw_http::HttpReply rb = raw_http::http_request(server.port(), "POST", "/v1/embeddings", b64.dump());
  ASSERT_EQ(rb.status, 200) << rb.body;
  EXPECT_EQ(decode_base64_f32(json::parse(rb.body)["data"][0]["embedding"]),
            j["data"][0]["embedding"].get<std::vector<float>>());

  // Unnormalized (vLLM's normalize: false): the raw pooled vector, which is not of norm 1.
  const json raw = {{"input", texts[0]}, {"normalize", false}};
  const json rr = json::parse(raw_http::http_request(server.port(), "POST", "/v1/embeddings", raw.dump()).body);
  double raw_norm = 0.0;
  for (float x : rr["data"][0]["embedding"].get<std::vector<float>>()) raw_norm += double(x) * x;
  EXPECT_GT(std::fabs(raw_norm - 1.0), 1e-3);
}

// llama-server's /embedding and /embeddings: the same pooled vectors as /v1/embeddings, Euclidean-normed by default,
// raw with embd_normalize -1, as [{"index", "embedding": [[...]]}].
TEST(EmbeddingsEndpointTest, LlamaServersEmbeddingRouteGivesTheSameVectorsInItsShape) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat"};
  const json oai = json::parse(
      raw_http::http_request(server.port(), "POST", "/v1/embeddings", json({{"input", texts}}).dump()).body);
  const json raw = json::parse(raw_http::http_request(server.port(), "POST", "/v1/embeddings",
                                                      json({{"input", texts}, {"normalize", false}}).dump())
                                   .body);
  for (const char* route : {"/embedding", "/embeddings"}) {
    const raw_http::HttpReply r =
        raw_http::http_request(server.port(), "POST", route, json({{"content", texts}}).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    ASSERT_TRUE(j.is_array()) << r.body;
    ASSERT_EQ(j.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(j[i]["index"], i);
      ASSERT_EQ(j[i]["embedding"].size(), 1u);
      const std::vector<float> got = j[i]["embedding"][0].get<std::vector<float>>();
      const std::vector<float> want = oai["data"][i]["embedding"].get<std::vector<float>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t d = 0; d < got.size(); ++d) EXPECT_NEAR(got[d], want[d], 1e-6) << route << " " << i << " " << d;
    }
  }
  const json none = json::parse(raw_http::http_request(server.port(), "POST", "/embedding",
                                                       json({{"input", texts[0]}, {"embd_normalize", -1}}).dump())
                                    .body);
  EXPECT_EQ(none[0]["embedding"][0].get<std::vector<float>>(), raw["data"][0]["embedding"].get<std::vector<float>>());
  const raw_http::HttpReply bad =
      raw_http::http_request(server.port(), "POST", "/embedding", json({{"input", "a"}, {"normalize", true}}).dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("normalize"));
}

TEST(EmbeddingsEndpointTest, WhatItCannotDoIsA400NamingTheField) {
  InProcessServer server;
  ASSERT_TRUE(server.started());
  auto post = [&](const json& body) {
    return raw_http::http_request(server.port(), "POST", "/v1/embeddings", body.dump());
  };
  const raw_http::HttpReply dims = post({{"input", "a"}, {"dimensions", 32}});
  EXPECT_EQ(dims.status, 400);
  EXPECT_THAT(dims.body, HasSubstr("\"param\":\"dimensions\""));
  EXPECT_THAT(dims.body, HasSubstr("64 dimensions"));
  EXPECT_THAT(dims.body, HasSubstr("does not declare Matryoshka"));
  EXPECT_EQ(post({{"input", "a"}, {"dimensions", 64}}).status, 200);
  EXPECT_EQ(post({{"input", json::array({100000})}}).status, 400);
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += " cat";
  EXPECT_EQ(post({{"input", long_text}}).status, 400);  // longer than the context
  EXPECT_EQ(post({{"input", "a"}, {"model", "other"}}).status, 404);
  EXPECT_EQ(raw_http::http_request(server.port(), "GET", "/v1/embeddings").status, 405);
}

TEST(EmbeddingsEndpointTest, DimensionsOfAMatryoshkaModelAreTheFirstValuesRenormalized) {
  ApiServerOptions api;
  api.matryoshka.allowed = {16, 32};
  InProcessServer server({}, api);
  ASSERT_TRUE(server.started());
  auto post = [&](const json& body) {
    return raw_http::http_request(server.port(), "POST", "/v1/embeddings", body.dump());
  };
  const raw_http::HttpReply full_reply = post({{"input", "Once upon a time"}, {"normalize", false}});
  ASSERT_EQ(full_reply.status, 200) << full_reply.body;
  const std::vector<float> full = json::parse(full_reply.body)["data"][0]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(full.size(), 64u);
  for (int64_t n : {16, 32}) {
    const raw_http::HttpReply r = post({{"input", "Once upon a time"}, {"dimensions", n}});
    ASSERT_EQ(r.status, 200) << r.body;
    const std::vector<float> got = json::parse(r.body)["data"][0]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), size_t(n));
    std::vector<float> want(full.begin(), full.begin() + n);  // cut, then normalized
    l2_normalize(want);
    double norm = 0.0;
    for (size_t d = 0; d < got.size(); ++d) {
      EXPECT_NEAR(got[d], want[d], 1e-6) << n << " dimensions, dimension " << d;
      norm += double(got[d]) * got[d];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  // Unnormalized: just the first values.
  const raw_http::HttpReply raw = post({{"input", "Once upon a time"}, {"dimensions", 16}, {"normalize", false}});
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(json::parse(raw.body)["data"][0]["embedding"].get<std::vector<float>>(),
            std::vector<float>(full.begin(), full.begin() + 16));
  // A size the model does not declare, or more than it has: 400 naming the field.
  for (int64_t n : {20, 65}) {
    const raw_http::HttpReply r = post({{"input", "a"}, {"dimensions", n}});
    EXPECT_EQ(r.status, 400) << n;
    EXPECT_THAT(r.body, HasSubstr("\"param\":\"dimensions\"")) << n;
  }
  EXPECT_EQ(post({{"input", "a"}, {"dimensions", 64}}).status, 200);
}

// A model whose tokenizer appends EOS (tokenizer.ggml.add_eos_token, Qwen3-Embedding's): each text input ends with
// it, so last-token pooling reads the EOS row; token-id inputs are taken as given.
TEST(EmbeddingsEndpointTest, TextInputsEndWithEosWhereTheTokenizerAppendsIt) {
  ApiServerOptions api;
  api.embedding_eos = 2;  // stories260K's </s>
  InProcessServer server({}, api);
  ASSERT_TRUE(server.started());
  auto embedding = [&](const json& input) {
    const raw_http::HttpReply r = raw_http::http_request(server.port(), "POST", "/v1/embeddings",
                                                         json({{"input", input}, {"normalize", false}}).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    return std::pair{j["data"][0]["embedding"].get<std::vector<float>>(), j["usage"]["prompt_tokens"].get<int64_t>()};
  };
  std::vector<TokenId> tokens = server.tokenizer().encode("The cat sat", true);
  const auto [from_text, text_tokens] = embedding("The cat sat");
  const auto [from_ids, id_tokens] = embedding(tokens);
  tokens.push_back(2);
  const auto [with_eos, eos_tokens] = embedding(tokens);
  EXPECT_EQ(text_tokens, int64_t(tokens.size()));
  EXPECT_EQ(id_tokens + 1, text_tokens);
  EXPECT_EQ(from_text, with_eos);
  EXPECT_NE(from_text, from_ids);
}

}  // namespace
}  // namespace pagoda::server
