// The tokenizer.json reader: model (BPE vocab + merges), normalizer (none or NFC), pre_tokenizer (ByteLevel,
// or a Sequence of one Split regex and a ByteLevel), added_tokens, post_processor (TemplateProcessing's leading
// special token is BOS, its trailing one an appended EOS) and decoder (ByteLevel). Anything else is refused by name
// rather than run wrongly.
#include "tokenizer/hf_tokenizer_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

#include "core/json_text.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_wordpiece_loader.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace pagoda {
namespace {

using nlohmann::json;

struct Reader {
  std::string_view name;
  Status fail(std::string_view field, const std::string& message) const {
    return make_error(fmt::format("{}: {} {}", name, field, message));
  }
};

std::string type_of(const json& node, std::string_view key = "type") {
  if (!node.is_object()) return "";
  const auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

// A boolean option: absent or null is `fallback`; any other type is an error naming `field`.`key`.
Result<bool> flag(const Reader& r, const json& node, std::string_view field, const char* key, bool fallback) {
  const auto it = node.find(key);
  if (it == node.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return r.fail(fmt::format("{}.{}", field, key), "is not true or false");
  return it->get<bool>();
}

// An integer JSON number as int64; nullopt for other types and for integers int64 cannot hold.
std::optional<int64_t> integer_of(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= uint64_t(INT64_MAX) ? std::optional<int64_t>(int64_t(u)) : std::nullopt;
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

// Ids beyond the entries that name them leave holes, each a slot in the tables: a hostile id must not make
// the loader allocate gigabytes for a few entries.
constexpr int64_t kMaxIdGap = int64_t(1) << 20;

// ByteLevel as a pre-tokenizer: use_regex means GPT-2's split regex runs inside it.
Status read_byte_level(const Reader& r, const json& node, std::string_view field, bool& uses_regex) {
  PAGODA_ASSIGN_OR_RETURN(const bool add_prefix_space, flag(r, node, field, "add_prefix_space", false));
  if (add_prefix_space) return r.fail(fmt::format("{}.add_prefix_space", field), "is true; only false is supported");
  PAGODA_ASSIGN_OR_RETURN(uses_regex, flag(r, node, field, "use_regex", true));
  return Status::ok_status();
}

Status read_split(const Reader& r, const json& node, std::string_view field, BpeVocab& vocab) {
  const auto pattern = node.find("pattern");
  if (pattern == node.end() || !pattern->is_object()) return r.fail(fmt::format("{}.pattern", field), "is missing");
  const auto regex = pattern->find("Regex");
  if (regex == pattern->end() || !regex->is_string()) {
    return r.fail(fmt::format("{}.pattern", field), "has no Regex string (String patterns are not supported)");
  }
  if (type_of(node, "behavior") != "Isolated") {
    return r.fail(fmt::format("{}.behavior", field),
                  fmt::format("is '{}'; only 'Isolated' is supported", type_of(node, "behavior")));
  }
  PAGODA_ASSIGN_OR_RETURN(const bool invert, flag(r, node, field, "invert", false));
  if (invert) return r.fail(fmt::format("{}.invert", field), "is true; only false is supported");
  vocab.split_regexes = {regex->get<std::string>()};
  return Status::ok_status();
}

Status read_pre_tokenizer(const Reader& r, const json& root, BpeVocab& vocab) {
  const auto it = root.find("pre_tokenizer");
  if (it == root.end() || it->is_null()) {
    return r.fail("pre_tokenizer", "is missing; byte-level BPE needs a ByteLevel pre-tokenizer");
  }
  const std::string type = type_of(*it);
  bool uses_regex = false;
  if (type == "ByteLevel") {
    PAGODA_RETURN_IF_ERROR(read_byte_level(r, *it, "pre_tokenizer", uses_regex));
    vocab.split_regexes = {std::string(kGpt2SplitRegex)};
    return Status::ok_status();
  }
  if (type != "Sequence") {
    return r.fail("pre_tokenizer.type", fmt::format("is '{}'; only ByteLevel or a Sequence of Split and ByteLevel "
                                                    "is supported",
                                                    type));
  }
  const auto steps = it->find("pretokenizers");
  if (steps == it->end() || !steps->is_array()) return r.fail("pre_tokenizer.pretokenizers", "is not an array");
  int splits = 0;
  bool byte_level = false;
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string field = fmt::format("pre_tokenizer.pretokenizers[{}]", i);
    const std::string step_type = type_of((*steps)[i]);
    if (step_type == "Split") {
      if (++splits > 1 || byte_level)
        return r.fail(field, "is a second Split; only one, before ByteLevel, is supported");
      PAGODA_RETURN_IF_ERROR(read_split(r, (*steps)[i], field, vocab));
    } else if (step_type == "ByteLevel") {
      PAGODA_RETURN_IF_ERROR(read_byte_level(r, (*steps)[i], field, uses_regex));
      if (uses_regex && splits > 0) return r.fail(field + ".use_regex", "is true after a Split; not supported");
      if (uses_regex) vocab.split_regexes = {std::string(kGpt2SplitRegex)};
      byte_level = true;
    } else {
      return r.fail(field + ".type", fmt::format("is '{}'; only Split and ByteLevel are supported", step_type));
    }
  }
  if (!byte_level) return r.fail("pre_tokenizer", "has no ByteLevel step; only byte-level BPE is supported");
  return Status::ok_status();
}

Status read_model(const Reader& r, const json& root, BpeVocab& vocab) {
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return r.fail("model", "is missing or not an object");
  const std::string type = type_of(*model);
  if (type != "BPE") return r.fail("model.type", fmt::format("is '{}'; only 'BPE' (byte-level) is supported", type));
  PAGODA_ASSIGN_OR_RETURN(const bool byte_fallback, flag(r, *model, "model", "byte_fallback", false));
  if (byte_fallback) return r.fail("model.byte_fallback", "is true; not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model->find(key);
    if (it != model->end() && !it->is_null() && !(it->is_string() && it->get_ref<const std::string&>().empty())) {
      return r.fail(fmt::format("model.{}", key), "is set; not supported");
    }
  }
  PAGODA_ASSIGN_OR_RETURN(vocab.ignore_merges, flag(r, *model, "model", "ignore_merges", false));
  const auto tokens = model->find("vocab");
  if (tokens == model->end() || !tokens->is_object()) return r.fail("model.vocab", "is missing or not an object");
  const int64_t max_id = std::min(int64_t(tokens->size()) + kMaxIdGap, int64_t(1) << 30);
  for (const auto& [token, id] : tokens->items()) {
    const std::optional<int64_t> index = integer_of(id);
    if (!index || *index < 0 || *index >= max_id) {
      return r.fail(fmt::format("model.vocab['{}']", token),
                    fmt::format("is not an id in 0..{} (the vocabulary has {} entries)", max_id - 1, tokens->size()));
    }
    if (size_t(*index) >= vocab.tokens.size()) vocab.tokens.resize(size_t(*index) + 1);
    if (!vocab.tokens[size_t(*index)].empty()) {
      return r.fail(fmt::format("model.vocab['{}']", token),
                    fmt::format("reuses id {} of '{}'", *index, vocab.tokens[size_t(*index)]));
    }
    if (token.empty()) return r.fail("model.vocab", "has an empty token");
    vocab.tokens[size_t(*index)] = token;
  }
  const auto merges = model->find("merges");
  if (merges == model->end() || !merges->is_array()) return r.fail("model.merges", "is missing or not an array");
  vocab.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& merge = (*merges)[i];
    if (merge.is_string()) {
      const std::string& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
          text.find(' ', space + 1) != std::string::npos) {
        return r.fail(fmt::format("model.merges[{}]", i), fmt::format("is '{}', not 'left right'", text));
      }
      vocab.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      vocab.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      return r.fail(fmt::format("model.merges[{}]", i), "is neither a 'left right' string nor a [left, right] pair");
    }
  }
  return Status::ok_status();
}

Status read_added_tokens(const Reader& r, const json& root, BpeVocab& vocab) {
  const auto added = root.find("added_tokens");
  if (added == root.end() || added->is_null()) return Status::ok_status();
  if (!added->is_array()) return r.fail("added_tokens", "is not an array");
  const int64_t max_id = std::min(int64_t(vocab.tokens.size()) + int64_t(added->size()) + kMaxIdGap, int64_t(1) << 30);
  for (size_t i = 0; i < added->size(); ++i) {
    const json& node = (*added)[i];
    const std::string field = fmt::format("added_tokens[{}]", i);
    if (!node.is_object()) return r.fail(field, "is not an object");
    const auto id = node.find("id");
    const auto content = node.find("content");
    if (id == node.end() || !id->is_number_integer()) return r.fail(field + ".id", "is missing or not an integer");
    if (content == node.end() || !content->is_string() || content->get_ref<const std::string&>().empty()) {
      return r.fail(field + ".content", "is missing or not a non-empty string");
    }
    const std::optional<int64_t> id_value = integer_of(*id);
    if (!id_value || *id_value < 0 || *id_value >= max_id) {
      return r.fail(field + ".id", fmt::format("is outside 0..{} (the vocabulary has {} entries and {} added tokens)",
                                               max_id - 1, vocab.tokens.size(), added->size()));
    }
    AddedToken token;
    token.id = TokenId(*id_value);
    token.content = content->get<std::string>();
    PAGODA_ASSIGN_OR_RETURN(token.special, flag(r, node, field, "special", false));
    PAGODA_ASSIGN_OR_RETURN(token.lstrip, flag(r, node, field, "lstrip", false));
    PAGODA_ASSIGN_OR_RETURN(token.rstrip, flag(r, node, field, "rstrip", false));
    vocab.added.push_back(std::move(token));
  }
  return Status::ok_status();
}

TokenId find_added(const BpeVocab& vocab, std::string_view content) {
  for (const AddedToken& token : vocab.added) {
    if (token.content == content) return token.id;
  }
  return -1;
}

// BOS: the special token a TemplateProcessing puts before the text (possibly inside a Sequence); `trailing`: the one
// it puts after the text (Qwen3-Embedding's <|endoftext|>), for bpe_vocab_from_hf_json to make the appended EOS.
Status read_post_processor(const Reader& r, const json& node, std::string_view field, BpeVocab& vocab,
                           TokenId* trailing) {
  if (node.is_null()) return Status::ok_status();
  const std::string type = type_of(node);
  if (type == "ByteLevel") return Status::ok_status();
  if (type == "Sequence") {
    const auto steps = node.find("processors");
    if (steps == node.end() || !steps->is_array())
      return r.fail(fmt::format("{}.processors", field), "is not an array");
    for (size_t i = 0; i < steps->size(); ++i) {
      PAGODA_RETURN_IF_ERROR(
          read_post_processor(r, (*steps)[i], fmt::format("{}.processors[{}]", field, i), vocab, trailing));
    }
    return Status::ok_status();
  }
  if (type != "TemplateProcessing") {
    return r.fail(fmt::format("{}.type", field), fmt::format("is '{}'; only ByteLevel, TemplateProcessing or a "
                                                             "Sequence of them is supported",
                                                             type));
  }
  const auto single = node.find("single");
  if (single == node.end() || !single->is_array() || single->empty()) {
    return r.fail(fmt::format("{}.single", field), "is missing or empty");
  }
  if (single->size() > 1) {
    const json& last = single->back();
    if (last.is_object() && last.contains("SpecialToken")) {
      const std::string name = type_of(last["SpecialToken"], "id");
      const TokenId id = find_added(vocab, name);
      if (id == -1)
        return r.fail(fmt::format("{}.single[{}].SpecialToken.id", field, single->size() - 1),
                      fmt::format("is '{}', not an added token", name));
      *trailing = id;
    }
  }
  const json& first = (*single)[0];
  if (!first.is_object() || !first.contains("SpecialToken")) return Status::ok_status();
  const json& special = first["SpecialToken"];
  const std::string name = type_of(special, "id");
  const TokenId id = find_added(vocab, name);
  if (id == -1) {
    return r.fail(fmt::format("{}.single[0].SpecialToken.id", field), fmt::format("is '{}', not an added token", name));
  }
  vocab.bos_id = id;
  vocab.add_bos = true;
  vocab.add_bos_set = true;
  return Status::ok_status();
}

// tokenizer_config.json writes a token as "text" or {"content": "text", ...}; absent or null is "".
Result<std::string> config_token(const Reader& r, const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  const auto content = it->is_object() ? it->find("content") : it->end();
  if (!it->is_object() || content == it->end() || !content->is_string())
    return r.fail(fmt::format("(tokenizer_config.json) {}", key), "is neither a string nor {\"content\": string}");
  return content->get<std::string>();
}

// Untrusted JSON text that must hold an object; errors name `field`.
Result<json> parse_object(const Reader& r, std::string_view text, std::string_view field) {
  Result<json> parsed = parse_untrusted_json(text);
  if (!parsed.ok()) return r.fail(field, parsed.error());
  if (!parsed->is_object()) return r.fail(field, "is not a JSON object");
  return parsed;
}

Status read_config(const Reader& r, std::string_view config_json, BpeVocab& vocab) {
  if (config_json.empty()) return Status::ok_status();
  PAGODA_ASSIGN_OR_RETURN(const json config, parse_object(r, config_json, "(tokenizer_config.json)"));
  PAGODA_ASSIGN_OR_RETURN(const std::string eos, config_token(r, config, "eos_token"));
  if (!eos.empty()) vocab.eos_id = find_added(vocab, eos);
  PAGODA_ASSIGN_OR_RETURN(const std::string bos, config_token(r, config, "bos_token"));
  if (!bos.empty() && find_added(vocab, bos) != -1) vocab.bos_id = find_added(vocab, bos);
  const auto add_bos = config.find("add_bos_token");
  if (add_bos != config.end() && !add_bos->is_null()) {
    if (!add_bos->is_boolean()) return r.fail("(tokenizer_config.json) add_bos_token", "is not true or false");
    vocab.add_bos = add_bos->get<bool>() && vocab.bos_id != -1;
    vocab.add_bos_set = true;
  }
  return Status::ok_status();
}

// generation_config.json's eos_token_id (one id or a list): generation ends at each of them.
Status read_generation_config(const Reader& r, std::string_view generation_json, BpeVocab& vocab) {
  if (generation_json.empty()) return Status::ok_status();
  PAGODA_ASSIGN_OR_RETURN(const json config, parse_object(r, generation_json, "(generation_config.json)"));
  const auto it = config.find("eos_token_id");
  if (it == config.end() || it->is_null()) return Status::ok_status();
  const size_t num_ids = it->is_array() ? it->size() : 1;
  for (size_t i = 0; i < num_ids; ++i) {
    const std::optional<int64_t> value = integer_of(it->is_array() ? (*it)[i] : *it);
    if (!value || *value < 0 || *value >= (int64_t(1) << 30)) {
      return r.fail(fmt::format("(generation_config.json) eos_token_id[{}]", i), "is not a token id");
    }
    const auto id = TokenId(*value);
    if (vocab.eos_id == -1) {
      vocab.eos_id = id;
    } else if (id != vocab.eos_id &&
               std::find(vocab.stop_ids.begin(), vocab.stop_ids.end(), id) == vocab.stop_ids.end()) {
      vocab.stop_ids.push_back(id);
    }
  }
  return Status::ok_status();
}

// Whether the file's model.type is WordPiece (a text that does not parse is left to the BPE reader's errors).
bool is_wordpiece_json(std::string_view text) {
  Result<json> parsed = parse_untrusted_json(text);
  if (!parsed.ok() || !parsed->is_object()) return false;
  const auto model = parsed->find("model");
  return model != parsed->end() && type_of(*model) == "WordPiece";
}

}  // namespace

Result<BpeVocab> bpe_vocab_from_hf_json(std::string_view json_text, std::string_view name, std::string_view config_json,
                                        std::string_view generation_config_json) {
  const Reader r{name};
  Result<json> parsed = parse_untrusted_json(json_text);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", name, parsed.error()));
  const json& root = *parsed;
  if (!root.is_object()) return make_error(fmt::format("{}: the top level is not a JSON object", name));
  BpeVocab vocab;
  PAGODA_RETURN_IF_ERROR(read_model(r, root, vocab));
  const auto normalizer = root.find("normalizer");
  if (normalizer != root.end() && !normalizer->is_null()) {
    const std::string type = type_of(*normalizer);
    if (type != "NFC") return r.fail("normalizer.type", fmt::format("is '{}'; only none or NFC is supported", type));
    vocab.nfc = true;
  }
  PAGODA_RETURN_IF_ERROR(read_pre_tokenizer(r, root, vocab));
  PAGODA_RETURN_IF_ERROR(read_added_tokens(r, root, vocab));
  const auto post = root.find("post_processor");
  TokenId trailing = -1;
  if (post != root.end()) PAGODA_RETURN_IF_ERROR(read_post_processor(r, *post, "post_processor", vocab, &trailing));
  const auto decoder = root.find("decoder");
  if (decoder != root.end() && !decoder->is_null() && type_of(*decoder) != "ByteLevel") {
    return r.fail("decoder.type", fmt::format("is '{}'; only ByteLevel is supported", type_of(*decoder)));
  }
  PAGODA_RETURN_IF_ERROR(read_config(r, config_json, vocab));
  PAGODA_RETURN_IF_ERROR(read_generation_config(r, generation_config_json, vocab));
  if (trailing != -1) {
    // As llama.cpp's converter reads it: the appended token is EOS (add_eos_token); an EOS the configs named
    // otherwise still ends generation.
    if (vocab.eos_id != -1 && vocab.eos_id != trailing &&
        std::find(vocab.stop_ids.begin(), vocab.stop_ids.end(), vocab.eos_id) == vocab.stop_ids.end())
      vocab.stop_ids.push_back(vocab.eos_id);
    std::erase(vocab.stop_ids, trailing);
    vocab.eos_id = trailing;
    vocab.add_eos = true;
  }
  return vocab;
}

Result<std::unique_ptr<Tokenizer>> tokenizer_from_hf_json(const std::string& path) {
  const auto read = [](const std::string& file, std::string& out) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return false;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    out = std::move(buffer).str();
    return true;
  };
  std::string text;
  if (!read(path, text)) return make_error(fmt::format("{}: cannot read the file", path));
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::string config;
  std::string generation;
  std::error_code ec;
  if (std::filesystem::exists(dir / "tokenizer_config.json", ec))
    read((dir / "tokenizer_config.json").string(), config);
  if (std::filesystem::exists(dir / "generation_config.json", ec)) {
    read((dir / "generation_config.json").string(), generation);
  }
  if (is_wordpiece_json(text)) {
    PAGODA_ASSIGN_OR_RETURN(WordPieceVocab wordpiece, wordpiece_vocab_from_hf_json(text, path));
    return std::unique_ptr<Tokenizer>(std::make_unique<WordPieceTokenizer>(std::move(wordpiece)));
  }
  PAGODA_ASSIGN_OR_RETURN(BpeVocab vocab, bpe_vocab_from_hf_json(text, path, config, generation));
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok, BpeTokenizer::create(std::move(vocab), path));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace pagoda
