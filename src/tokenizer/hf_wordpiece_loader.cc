// The tokenizer.json reader for WordPiece models: each section checked and mapped onto WordPieceVocab; what the
// tokenizer would run differently from HF is refused by name.
#include "tokenizer/hf_wordpiece_loader.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_text.h"

namespace pagoda {
// Named, so that a unity build's other tokenizer.json reader does not clash with these helpers.
namespace hf_wordpiece {
namespace {

using nlohmann::json;

constexpr std::string_view kWordStart = "\xE2\x96\x81";
// Ids beyond the entries that name them leave holes; a hostile id must not make the loader allocate gigabytes.
constexpr int64_t kMaxIdGap = int64_t(1) << 20;

struct Reader {
  std::string_view name;
  Status fail(std::string_view field, const std::string& message) const {
    return make_error(fmt::format("{}: {} {}", name, field, message));
  }
};

std::string type_of(const json& node) {
  if (!node.is_object()) return "";
  const auto it = node.find("type");
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<int64_t> integer_of(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= uint64_t(INT64_MAX) ? std::optional<int64_t>(int64_t(u)) : std::nullopt;
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

// An optional boolean: absent or null is `fallback` (nullopt: "follow another flag").
Result<std::optional<bool>> optional_flag(const Reader& r, const json& node, std::string_view field, const char* key) {
  const auto it = node.find(key);
  if (it == node.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) return r.fail(fmt::format("{}.{}", field, key), "is not true, false or null");
  return std::optional<bool>(it->get<bool>());
}

struct RawToken {
  std::string text;
  TokenType type = TokenType::kUnused;
};

Status read_model(const Reader& r, const json& root, std::vector<RawToken>& tokens, std::string& prefix,
                  std::string& unk, int32_t& max_chars) {
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return r.fail("model", "is missing or not an object");
  if (type_of(*model) != "WordPiece") {
    return r.fail("model.type", fmt::format("is '{}', not 'WordPiece'", type_of(*model)));
  }
  const auto vocab = model->find("vocab");
  if (vocab == model->end() || !vocab->is_object() || vocab->empty()) {
    return r.fail("model.vocab", "is missing, empty or not an object");
  }
  const int64_t max_id = std::min(int64_t(vocab->size()) + kMaxIdGap, int64_t(1) << 30);
  for (const auto& [text, id] : vocab->items()) {
    const std::optional<int64_t> index = integer_of(id);
    if (!index || *index < 0 || *index >= max_id) {
      return r.fail(fmt::format("model.vocab['{}']", text), fmt::format("is not an id in 0..{}", max_id - 1));
    }
    if (text.empty()) return r.fail("model.vocab", "has an empty token");
    if (size_t(*index) >= tokens.size()) tokens.resize(size_t(*index) + 1);
    RawToken& slot = tokens[size_t(*index)];
    if (slot.type != TokenType::kUnused) {
      return r.fail(fmt::format("model.vocab['{}']", text), fmt::format("reuses id {} of '{}'", *index, slot.text));
    }
    slot = RawToken{text, TokenType::kNormal};
  }
  const auto string_field = [&](const char* key, std::string fallback) -> Result<std::string> {
    const auto it = model->find(key);
    if (it == model->end() || it->is_null()) return fallback;
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      return r.fail(fmt::format("model.{}", key), "is not a non-empty string");
    }
    return it->get<std::string>();
  };
  PAGODA_ASSIGN_OR_RETURN(prefix, string_field("continuing_subword_prefix", "##"));
  PAGODA_ASSIGN_OR_RETURN(unk, string_field("unk_token", "[UNK]"));
  const auto chars = model->find("max_input_chars_per_word");
  if (chars != model->end() && !chars->is_null()) {
    const std::optional<int64_t> value = integer_of(*chars);
    if (!value || *value < 1) return r.fail("model.max_input_chars_per_word", "is not a positive integer");
    max_chars = int32_t(std::min<int64_t>(*value, INT32_MAX));
  } else {
    max_chars = 100;  // HF's default
  }
  return Status::ok_status();
}

Status read_normalizer(const Reader& r, const json& root, WordPieceVocab& vocab) {
  const auto it = root.find("normalizer");
  if (it == root.end() || it->is_null()) {
    vocab.lowercase = false;
    vocab.strip_accents = false;
    return Status::ok_status();
  }
  if (type_of(*it) != "BertNormalizer") {
    return r.fail("normalizer.type", fmt::format("is '{}'; only none or BertNormalizer is supported", type_of(*it)));
  }
  for (const char* key : {"clean_text", "handle_chinese_chars"}) {
    PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> on, optional_flag(r, *it, "normalizer", key));
    if (on == false) return r.fail(fmt::format("normalizer.{}", key), "is false; only true is supported");
  }
  PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> lowercase, optional_flag(r, *it, "normalizer", "lowercase"));
  PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> strip, optional_flag(r, *it, "normalizer", "strip_accents"));
  vocab.lowercase = lowercase.value_or(true);
  vocab.strip_accents = strip.value_or(vocab.lowercase);  // HF: null follows lowercase
  return Status::ok_status();
}

Status read_added_tokens(const Reader& r, const json& root, std::vector<RawToken>& tokens) {
  const auto added = root.find("added_tokens");
  if (added == root.end() || added->is_null()) return Status::ok_status();
  if (!added->is_array()) return r.fail("added_tokens", "is not an array");
  const int64_t max_id = std::min(int64_t(tokens.size()) + int64_t(added->size()) + kMaxIdGap, int64_t(1) << 30);
  for (size_t i = 0; i < added->size(); ++i) {
    const json& node = (*added)[i];
    const std::string field = fmt::format("added_tokens[{}]", i);
    if (!node.is_object()) return r.fail(field, "is not an object");
    const auto id = node.find("id");
    const auto content = node.find("content");
    const std::optional<int64_t> index = id == node.end() ? std::nullopt : integer_of(*id);
    if (!index || *index < 0 || *index >= max_id) return r.fail(field + ".id", "is missing or not a token id");
    if (content == node.end() || !content->is_string() || content->get_ref<const std::string&>().empty()) {
      return r.fail(field + ".content", "is missing or not a non-empty string");
    }
    PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> special, optional_flag(r, node, field, "special"));
    if (size_t(*index) >= tokens.size()) tokens.resize(size_t(*index) + 1);
    RawToken& slot = tokens[size_t(*index)];
    if (slot.type != TokenType::kUnused && slot.text != content->get_ref<const std::string&>()) {
      return r.fail(field, fmt::format("gives id {} to '{}', the vocabulary's '{}'", *index,
                                       content->get_ref<const std::string&>(), slot.text));
    }
    slot = RawToken{content->get<std::string>(), special.value_or(false) ? TokenType::kControl
                                                                          : TokenType::kUserDefined};
  }
  return Status::ok_status();
}

std::optional<TokenId> find_token(const std::vector<RawToken>& tokens, std::string_view text) {
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].type != TokenType::kUnused && tokens[id].text == text) return TokenId(id);
  }
  return std::nullopt;
}

// [CLS] and [SEP]: what the post-processor frames a single text with, or the tokens spelled so.
Status read_post_processor(const Reader& r, const json& root, const std::vector<RawToken>& tokens,
                           WordPieceVocab& vocab) {
  std::string cls = "[CLS]";
  std::string sep = "[SEP]";
  const auto it = root.find("post_processor");
  if (it != root.end() && !it->is_null()) {
    const std::string type = type_of(*it);
    if (type == "BertProcessing") {
      for (auto [key, out] : {std::pair<const char*, std::string*>{"cls", &cls}, {"sep", &sep}}) {
        const auto pair = it->find(key);
        if (pair == it->end() || !pair->is_array() || pair->empty() || !(*pair)[0].is_string()) {
          return r.fail(fmt::format("post_processor.{}", key), "is not [token, id]");
        }
        *out = (*pair)[0].get<std::string>();
      }
    } else if (type == "TemplateProcessing") {
      const auto single = it->find("single");
      if (single == it->end() || !single->is_array() || single->size() != 3 || !(*single)[0].is_object() ||
          !(*single)[2].is_object() || !(*single)[0].contains("SpecialToken") ||
          !(*single)[2].contains("SpecialToken")) {
        return r.fail("post_processor.single", "is not [SpecialToken, Sequence, SpecialToken] (BERT's framing)");
      }
      const json& first = (*single)[0]["SpecialToken"];
      const json& last = (*single)[2]["SpecialToken"];
      const auto first_id = first.is_object() ? first.find("id") : first.end();
      const auto last_id = last.is_object() ? last.find("id") : last.end();
      if (first_id == first.end() || !first_id->is_string() || last_id == last.end() || !last_id->is_string()) {
        return r.fail("post_processor.single", "has a SpecialToken without a string id");
      }
      cls = first_id->get<std::string>();
      sep = last_id->get<std::string>();
    } else {
      return r.fail("post_processor.type",
                    fmt::format("is '{}'; only BertProcessing or TemplateProcessing is supported", type));
    }
  }
  const std::optional<TokenId> cls_id = find_token(tokens, cls);
  const std::optional<TokenId> sep_id = find_token(tokens, sep);
  if (!cls_id) return r.fail("post_processor", fmt::format("names '{}', which is not a token", cls));
  if (!sep_id) return r.fail("post_processor", fmt::format("names '{}', which is not a token", sep));
  vocab.cls_id = *cls_id;
  vocab.sep_id = *sep_id;
  return Status::ok_status();
}

}  // namespace

Result<WordPieceVocab> read_vocab(std::string_view json_text, std::string_view name) {
  const Reader r{name};
  Result<json> parsed = parse_untrusted_json(json_text);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", name, parsed.error()));
  const json& root = *parsed;
  if (!root.is_object()) return make_error(fmt::format("{}: the top level is not a JSON object", name));
  WordPieceVocab vocab;
  std::vector<RawToken> tokens;
  std::string prefix;
  std::string unk;
  PAGODA_RETURN_IF_ERROR(read_model(r, root, tokens, prefix, unk, vocab.max_word_chars));
  PAGODA_RETURN_IF_ERROR(read_normalizer(r, root, vocab));
  const auto pre = root.find("pre_tokenizer");
  if (pre == root.end() || type_of(*pre) != "BertPreTokenizer") {
    return r.fail("pre_tokenizer.type", fmt::format("is '{}'; only BertPreTokenizer is supported",
                                                    pre == root.end() ? "" : type_of(*pre)));
  }
  const auto decoder = root.find("decoder");
  if (decoder != root.end() && !decoder->is_null() && type_of(*decoder) != "WordPiece") {
    return r.fail("decoder.type", fmt::format("is '{}'; only WordPiece is supported", type_of(*decoder)));
  }
  PAGODA_RETURN_IF_ERROR(read_added_tokens(r, root, tokens));
  PAGODA_RETURN_IF_ERROR(read_post_processor(r, root, tokens, vocab));
  const std::optional<TokenId> unk_id = find_token(tokens, unk);
  if (!unk_id) return r.fail("model.unk_token", fmt::format("is '{}', which is not a token", unk));
  vocab.unk_id = *unk_id;
  vocab.pad_id = find_token(tokens, "[PAD]").value_or(-1);
  vocab.pieces.reserve(tokens.size());
  vocab.types.reserve(tokens.size());
  for (RawToken& token : tokens) {
    // llama.cpp's converter: control tokens as they are, continuations bare, word-initial pieces after U+2581.
    if (token.type == TokenType::kNormal) {
      token.text = token.text.starts_with(prefix) ? token.text.substr(prefix.size())
                                                  : std::string(kWordStart) + token.text;
    }
    vocab.pieces.push_back(std::move(token.text));
    vocab.types.push_back(token.type);
  }
  return vocab;
}

}  // namespace hf_wordpiece

Result<WordPieceVocab> wordpiece_vocab_from_hf_json(std::string_view json_text, std::string_view name) {
  return hf_wordpiece::read_vocab(json_text, name);
}

}  // namespace pagoda
