// Rerank request parsing, cross-encoder input framing and response building.
#include "server/rerank_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/json_text.h"
#include "server/openai_protocol.h"

namespace pagoda::server {
namespace {

std::optional<ApiError> parse_documents(const nlohmann::json& docs, const char* field, std::vector<std::string>* out) {
  const std::string shape = fmt::format("'{}' must be a non-empty array of strings{}", field,
                                        std::string_view(field) == "documents" ? " or of {\"text\": string} objects" : "");
  if (!docs.is_array() || docs.empty()) return invalid_request(shape, field);
  if (docs.size() > size_t(kMaxRerankDocuments))
    return invalid_request(fmt::format("at most {} documents per request", kMaxRerankDocuments), field);
  for (const nlohmann::json& doc : docs) {
    if (doc.is_string()) {
      out->push_back(doc.get<std::string>());
      continue;
    }
    if (std::string_view(field) == "documents" && doc.is_object()) {
      const auto text = doc.find("text");
      if (text != doc.end() && text->is_string() && doc.size() == 1) {
        out->push_back(text->get<std::string>());
        continue;
      }
    }
    return invalid_request(shape, field);
  }
  return std::nullopt;
}

// Every occurrence of `from` in `text` replaced by `to`, left to right, the replacement never searched again.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

std::optional<ApiError> read_bool(const nlohmann::json& body, const char* key, bool* out) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return invalid_request(fmt::format("'{}' must be a boolean", key), key);
  *out = it->get<bool>();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_rerank_params(std::string_view body_text, RerankParams* out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  RerankParams p;
  for (const auto& [key, value] : body.items()) {
    if (key == "model" || key == "query" || key == "documents" || key == "texts" || key == "top_n" ||
        key == "return_documents" || key == "return_text")
      continue;
    if (key == "raw_scores" || key == "truncate" || key == "truncation_direction" || key == "rank_fields" ||
        key == "max_chunks_per_doc" || key == "max_tokens_per_doc")
      return invalid_request(fmt::format("'{}' is not supported by this server's rerank endpoint", key), key);
    return invalid_request(fmt::format("Unrecognized request argument supplied: {}", key), key);
  }
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_request("'model' must be a string", "model");
    p.model = it->get<std::string>();
  }
  const auto query = body.find("query");
  if (query == body.end() || query->is_null()) return invalid_request("'query' is required", "query");
  if (!query->is_string()) return invalid_request("'query' must be a string", "query");
  p.query = query->get<std::string>();
  const auto documents = body.find("documents");
  const auto texts = body.find("texts");
  const bool has_documents = documents != body.end() && !documents->is_null();
  const bool has_texts = texts != body.end() && !texts->is_null();
  if (has_documents && has_texts) return invalid_request("give 'documents' or 'texts', not both", "texts");
  if (!has_documents && !has_texts) {
    return invalid_request("'documents' must be a non-empty array of strings", "documents");
  }
  p.tei = has_texts;
  if (auto e = parse_documents(has_texts ? *texts : *documents, has_texts ? "texts" : "documents", &p.documents))
    return e;
  if (auto it = body.find("top_n"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() && !it->is_number_unsigned())
      return invalid_request("'top_n' must be an integer", "top_n");
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT32_MAX)) {
      p.top_n = INT32_MAX;
    } else {
      p.top_n = it->get<int64_t>();
      if (*p.top_n < 0) return invalid_request("'top_n' must be at least 0", "top_n");
    }
  }
  bool return_documents = false;
  bool return_text = false;
  if (auto e = read_bool(body, "return_documents", &return_documents)) return e;
  if (auto e = read_bool(body, "return_text", &return_text)) return e;
  p.return_documents = p.tei ? return_text : return_documents;
  *out = std::move(p);
  return std::nullopt;
}

std::vector<TokenId> rerank_pair_tokens(const Tokenizer& tokenizer, const RerankFraming& framing,
                                        std::string_view query, std::string_view document) {
  if (!framing.prompt_template.empty()) {
    const std::string prompt =
        replace_all(replace_all(framing.prompt_template, "{query}", query), "{document}", document);
    return tokenizer.encode(prompt, /*add_bos=*/false, /*parse_special=*/true);
  }
  std::vector<TokenId> ids;
  if (framing.bos) ids.push_back(*framing.bos);
  const std::vector<TokenId> q = tokenizer.encode(query, /*add_bos=*/false, /*parse_special=*/false);
  ids.insert(ids.end(), q.begin(), q.end());
  if (framing.eos) ids.push_back(*framing.eos);
  if (framing.sep) ids.push_back(*framing.sep);
  const std::vector<TokenId> d = tokenizer.encode(document, /*add_bos=*/false, /*parse_special=*/false);
  ids.insert(ids.end(), d.begin(), d.end());
  if (framing.eos) ids.push_back(*framing.eos);
  return ids;
}

std::string rerank_response(const RerankParams& params, std::vector<RerankScore> scores, const std::string& model) {
  int64_t prompt_tokens = 0;
  for (const RerankScore& s : scores) prompt_tokens += s.prompt_tokens;
  std::stable_sort(scores.begin(), scores.end(), [](const RerankScore& a, const RerankScore& b) {
    return a.score > b.score || (a.score == b.score && a.index < b.index);
  });
  if (params.top_n && uint64_t(*params.top_n) < scores.size()) scores.resize(size_t(*params.top_n));
  nlohmann::json results = nlohmann::json::array();
  for (const RerankScore& s : scores) {
    nlohmann::json r = {{"index", s.index}, {params.tei ? "score" : "relevance_score", s.score}};
    if (params.return_documents) {
      const std::string& text = params.documents[size_t(s.index)];
      if (params.tei) {
        r["text"] = text;
      } else {
        r["document"] = {{"text", text}};
      }
    }
    results.push_back(std::move(r));
  }
  if (params.tei) return json_text(results);
  return json_text({{"model", params.model.value_or(model)},
                    {"object", "list"},
                    {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
                    {"results", std::move(results)}});
}

}  // namespace pagoda::server
