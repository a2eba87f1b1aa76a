// The rerank API's request and response shapes (POST /v1/rerank and /rerank, as llama-server takes them): pure
// functions from a JSON body to validated parameters (or an ApiError naming the field), from a query and a
// document to a cross-encoder's input tokens, and from scores to the response body. Jina's and Cohere's shape
// ({query, documents, top_n, return_documents} -> {model, object, usage, results: [{index, relevance_score,
// document?}]}) and TEI's ({query, texts, return_text} -> [{index, score, text?}]). No engine, no sockets: everything
// here is tested on strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

inline constexpr int32_t kMaxRerankDocuments = 2048;

struct RerankParams {
  std::optional<std::string> model;
  std::string query;
  std::vector<std::string> documents;  // Jina's/Cohere's "documents" (strings or {"text"}), or TEI's "texts"
  std::optional<int64_t> top_n;        // at least 0; more than the documents means all of them
  bool tei = false;                    // "texts" was given: TEI's answer shape
  bool return_documents = false;       // Jina/Cohere "return_documents", TEI "return_text"
};

// Parses and validates a request body. Unknown fields, wrong types, a missing query, no documents, more than
// kMaxRerankDocuments of them and both "documents" and "texts" are errors naming the field.
std::optional<ApiError> parse_rerank_params(std::string_view body, RerankParams* out);

// How a model frames a query and a document, as llama-server's format_prompt_rerank does it: with a rerank template
// (non-empty prompt_template), every "{query}" in it replaced by the query, then every "{document}" in that by the
// document, tokenized with its special tokens' texts read as those tokens and nothing added; without one, BOS, the
// query, EOS, SEP, the document, EOS, each where the vocabulary adds it.
struct RerankFraming {
  std::string prompt_template;
  std::optional<TokenId> bos;
  std::optional<TokenId> eos;  // the vocabulary's EOS, or its SEP where it has none
  std::optional<TokenId> sep;
};
std::vector<TokenId> rerank_pair_tokens(const Tokenizer& tokenizer, const RerankFraming& framing,
                                        std::string_view query, std::string_view document);

struct RerankScore {
  int32_t index = 0;  // into RerankParams::documents
  float score = 0.0f;
  int64_t prompt_tokens = 0;
};

// The whole response body: the scores highest first (ties in document order), cut to top_n, in the request's
// shape; usage counts every document's tokens.
std::string rerank_response(const RerankParams& params, std::vector<RerankScore> scores, const std::string& model);

}  // namespace pagoda::server
