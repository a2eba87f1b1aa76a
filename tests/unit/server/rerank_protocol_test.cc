// The rerank API's parsing (llama-server's own test requests: Jina's "documents", TEI's "texts", top_n, the bad
// documents it refuses; Cohere's {"text"} documents; each field's type and range, the error's param), the
// cross-encoder framing of a query and a document (llama-server's for a BERT vocabulary: [CLS] query [SEP]
// document; with a rerank template, the template with the pair put in, nothing added), and the response's shapes: highest score first, cut to top_n, documents returned on request.
#include "server/rerank_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/wordpiece_tokenizer.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

RerankParams parse_rerank_ok(const std::string& body) {
  RerankParams p;
  std::optional<ApiError> e = parse_rerank_params(body, &p);
  EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->message : "");
  return p;
}

ApiError parse_rerank_error(const std::string& body) {
  RerankParams p;
  std::optional<ApiError> e = parse_rerank_params(body, &p);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(RerankProtocolTest, JinaTeiAndCohereDocumentShapes) {
  const RerankParams jina = parse_rerank_ok(R"({"query": "q", "documents": ["a", "b"], "top_n": 1, "model": "m"})");
  EXPECT_EQ(jina.query, "q");
  EXPECT_THAT(jina.documents, ElementsAre("a", "b"));
  EXPECT_EQ(jina.top_n, 1);
  EXPECT_EQ(jina.model, "m");
  EXPECT_FALSE(jina.tei);
  const RerankParams tei = parse_rerank_ok(R"({"query": "q", "texts": ["a"], "return_text": true})");
  EXPECT_TRUE(tei.tei);
  EXPECT_TRUE(tei.return_documents);
  const RerankParams cohere = parse_rerank_ok(R"({"query": "q", "documents": [{"text": "a"}, "b"], "return_documents": true})");
  EXPECT_THAT(cohere.documents, ElementsAre("a", "b"));
  EXPECT_TRUE(cohere.return_documents);
  EXPECT_EQ(parse_rerank_ok(R"({"query": "q", "documents": ["a"], "top_n": 99})").top_n, 99);
}

// test_invalid_rerank_req's documents ([], None, 123, [1, 2, 3]) and the other refusals, each naming its field.
TEST(RerankProtocolTest, BadRequestsNameTheirField) {
  for (const char* docs : {"[]", "null", "123", "[1, 2, 3]", "[{\"text\": 1}]", "[{\"text\": \"a\", \"x\": 1}]"}) {
    const ApiError e = parse_rerank_error(std::string(R"({"query": "q", "documents": )") + docs + "}");
    EXPECT_EQ(e.http_status, 400);
    EXPECT_EQ(e.param, "documents") << docs;
  }
  EXPECT_EQ(parse_rerank_error(R"({"documents": ["a"]})").param, "query");
  EXPECT_EQ(parse_rerank_error(R"({"query": 1, "documents": ["a"]})").param, "query");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "documents": ["a"], "texts": ["b"]})").param, "texts");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "texts": [{"text": "a"}]})").param, "texts");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "documents": ["a"], "top_n": -1})").param, "top_n");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "documents": ["a"], "top_n": 1.5})").param, "top_n");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "documents": ["a"], "return_documents": "yes"})").param,
            "return_documents");
  EXPECT_EQ(parse_rerank_error(R"({"query": "q", "documents": ["a"], "model": 3})").param, "model");
  EXPECT_THAT(parse_rerank_error(R"({"query": "q", "documents": ["a"], "raw_scores": true})").message,
              HasSubstr("'raw_scores' is not supported"));
  EXPECT_THAT(parse_rerank_error(R"({"query": "q", "documents": ["a"], "bogus": 1})").message, HasSubstr("bogus"));
  EXPECT_EQ(parse_rerank_error("[1]").http_status, 400);
  json many = {{"query", "q"}, {"documents", json::array()}};
  for (int i = 0; i <= kMaxRerankDocuments; ++i) many["documents"].push_back("d");
  EXPECT_EQ(parse_rerank_error(many.dump()).param, "documents");
}

TEST(RerankProtocolTest, PairFramingIsLlamaServersForABertVocabulary) {
  WordPieceVocab vocab;
  vocab.pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81hello", "\xE2\x96\x81world"};
  vocab.types = {TokenType::kControl, TokenType::kControl, TokenType::kControl, TokenType::kControl,
                 TokenType::kNormal, TokenType::kNormal};
  vocab.pad_id = 0;
  vocab.unk_id = 1;
  vocab.cls_id = 2;
  vocab.sep_id = 3;
  const WordPieceTokenizer tok(std::move(vocab));
  // A BERT vocabulary adds BOS ([CLS]) and SEP, not EOS.
  const RerankFraming bert{.prompt_template = "", .bos = 2, .eos = std::nullopt, .sep = 3};  // no template
  EXPECT_THAT(rerank_pair_tokens(tok, bert, "Hello", "world [SEP]"), ElementsAre(2, 4, 3, 5, 1, 1, 1));
  const RerankFraming with_eos{.prompt_template = "", .bos = 2, .eos = 3, .sep = std::nullopt};
  EXPECT_THAT(rerank_pair_tokens(tok, with_eos, "hello", "world"), ElementsAre(2, 4, 3, 5, 3));
}

TEST(RerankProtocolTest, ARerankTemplateFramesThePairAsLlamaServerDoes) {
  WordPieceVocab vocab;
  vocab.pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81hello", "\xE2\x96\x81world"};
  vocab.types = {TokenType::kControl, TokenType::kControl, TokenType::kControl, TokenType::kControl,
                 TokenType::kNormal, TokenType::kNormal};
  vocab.pad_id = 0;
  vocab.unk_id = 1;
  vocab.cls_id = 2;
  vocab.sep_id = 3;
  const WordPieceTokenizer tok(std::move(vocab));
  // The template alone: nothing added (no BOS, EOS or SEP of the vocabulary's), its special tokens' texts read as
  // those tokens.
  const RerankFraming framing{.prompt_template = "{query} [SEP] {document}", .bos = 2, .eos = 3, .sep = 3};
  EXPECT_THAT(rerank_pair_tokens(tok, framing, "Hello", "world"), ElementsAre(4, 3, 5));
  // string_replace_all's order: every {query}, then every {document} in the result, the query's own included.
  EXPECT_THAT(rerank_pair_tokens(tok, framing, "hello {document}", "world"), ElementsAre(4, 5, 3, 5));
  EXPECT_THAT(rerank_pair_tokens(tok, framing, "hello", "world [SEP]"), ElementsAre(4, 3, 5, 3));
}

TEST(RerankProtocolTest, ResponsesSortCutAndReturnDocumentsInEachShape) {
  RerankParams p = parse_rerank_ok(R"({"query": "q", "documents": ["a", "b", "c"], "top_n": 2, "return_documents": true})");
  const std::vector<RerankScore> scores = {{0, -1.0f, 4}, {1, 2.5f, 5}, {2, 2.5f, 6}};
  const json jina = json::parse(rerank_response(p, scores, "served"));
  EXPECT_EQ(jina["model"], "served");
  EXPECT_EQ(jina["object"], "list");
  EXPECT_EQ(jina["usage"]["prompt_tokens"], 15);
  EXPECT_EQ(jina["usage"]["total_tokens"], 15);
  ASSERT_EQ(jina["results"].size(), 2u);
  EXPECT_EQ(jina["results"][0]["index"], 1);  // a tie keeps document order
  EXPECT_EQ(jina["results"][0]["relevance_score"], 2.5);
  EXPECT_EQ(jina["results"][0]["document"]["text"], "b");
  EXPECT_EQ(jina["results"][1]["index"], 2);

  RerankParams tei = parse_rerank_ok(R"({"query": "q", "texts": ["a", "b", "c"], "return_text": true, "model": "m"})");
  const json bare = json::parse(rerank_response(tei, scores, "served"));
  ASSERT_TRUE(bare.is_array());
  ASSERT_EQ(bare.size(), 3u);
  EXPECT_EQ(bare[2]["index"], 0);
  EXPECT_EQ(bare[2]["score"], -1.0);
  EXPECT_EQ(bare[2]["text"], "a");

  RerankParams none = parse_rerank_ok(R"({"query": "q", "documents": ["a", "b"], "model": "asked", "top_n": 0})");
  const json empty = json::parse(rerank_response(none, {{0, 1.0f, 1}, {1, 0.0f, 1}}, "served"));
  EXPECT_EQ(empty["model"], "asked");
  EXPECT_TRUE(empty["results"].empty());
  EXPECT_FALSE(empty["results"].is_null());
}

}  // namespace
}  // namespace pagoda::server
