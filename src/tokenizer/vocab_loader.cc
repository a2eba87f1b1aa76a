// vocab_from_gguf / tokenizer_from_gguf: validates the tokenizer.ggml.* metadata of a GGUF file into a Vocab
// (every count, id and type checked, errors naming the key) and builds the tokenizer its model names.
#include "tokenizer/vocab_loader.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf_names.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_piece.h"
#include "tokenizer/llama_pre_tokenizers.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace pagoda {
namespace {

constexpr const char* kModelKey = format::gguf_key::kTokenizerModel;
constexpr const char* kTokensKey = format::gguf_key::kTokens;
constexpr const char* kScoresKey = format::gguf_key::kScores;
constexpr const char* kTokenTypeKey = format::gguf_key::kTokenType;
constexpr const char* kBosKey = format::gguf_key::kBosId;
constexpr const char* kEosKey = format::gguf_key::kEosId;
constexpr const char* kUnknownKey = format::gguf_key::kUnknownId;
constexpr const char* kAddBosKey = format::gguf_key::kAddBos;
constexpr const char* kAddSpacePrefixKey = format::gguf_key::kAddSpacePrefix;
constexpr const char* kMergesKey = format::gguf_key::kMerges;
constexpr const char* kPreKey = format::gguf_key::kTokenizerPre;
constexpr const char* kEotKey = format::gguf_key::kEotId;
constexpr const char* kEomKey = format::gguf_key::kEomId;

Status error(const format::GgufFile& file, const std::string& message) {
  return make_error(fmt::format("{}: {}", file.name(), message));
}

// A special id: absent -> `fallback` (llama.cpp's SentencePiece defaults), -1 -> none, else within the vocab.
Result<TokenId> read_special_id(const format::GgufFile& file, const char* key, TokenId fallback, int32_t num_tokens) {
  PAGODA_ASSIGN_OR_RETURN(const std::optional<int64_t> value, file.get_i64(key));
  if (!value) return fallback;
  if (*value != -1 && (*value < 0 || *value >= num_tokens)) {
    return error(file, fmt::format("{} is {}, outside the vocabulary of {} tokens", key, *value, num_tokens));
  }
  return TokenId(*value);
}

Result<bool> read_flag(const format::GgufFile& file, const char* key, bool fallback) {
  PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> value, file.get_bool(key));
  return value.value_or(fallback);
}

// When a file has no token_type array: byte pieces by their spelling, the special ids by role, the rest normal.
std::vector<TokenType> derive_types(const Vocab& vocab) {
  std::vector<TokenType> types(vocab.pieces.size(), TokenType::kNormal);
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    if (parse_byte_piece(vocab.pieces[id])) types[id] = TokenType::kByte;
  }
  if (vocab.unk_id != -1) types[size_t(vocab.unk_id)] = TokenType::kUnknown;
  if (vocab.bos_id != -1) types[size_t(vocab.bos_id)] = TokenType::kControl;
  if (vocab.eos_id != -1) types[size_t(vocab.eos_id)] = TokenType::kControl;
  return types;
}

}  // namespace

Result<Vocab> vocab_from_gguf(const format::GgufFile& file) {
  Vocab vocab;
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> tokens, file.get_string_array(kTokensKey));
  if (!tokens) return error(file, fmt::format("{} is missing (the file has no tokenizer vocabulary)", kTokensKey));
  if (tokens->empty()) return error(file, fmt::format("{} has no entries", kTokensKey));
  if (tokens->size() > size_t(INT32_MAX)) return error(file, fmt::format("{} has too many entries", kTokensKey));
  vocab.pieces = std::move(*tokens);
  const auto num_tokens = int32_t(vocab.pieces.size());

  PAGODA_ASSIGN_OR_RETURN(std::optional<std::vector<float>> scores, file.get_f32_array(kScoresKey));
  if (!scores) {
    return error(file, fmt::format("{} is missing (SentencePiece merges need one score per token)", kScoresKey));
  }
  if (scores->size() != vocab.pieces.size()) {
    return error(file,
                 fmt::format("{} has {} entries, expected {} (one per token)", kScoresKey, scores->size(), num_tokens));
  }
  for (size_t id = 0; id < scores->size(); ++id) {
    // A NaN would break the merge heap's ordering.
    if (!std::isfinite((*scores)[id])) {
      return error(file, fmt::format("{}[{}] is {}, expected a finite number", kScoresKey, id, (*scores)[id]));
    }
  }
  vocab.scores = std::move(*scores);

  PAGODA_ASSIGN_OR_RETURN(vocab.bos_id, read_special_id(file, kBosKey, 1, num_tokens));
  PAGODA_ASSIGN_OR_RETURN(vocab.eos_id, read_special_id(file, kEosKey, 2, num_tokens));
  PAGODA_ASSIGN_OR_RETURN(vocab.unk_id, read_special_id(file, kUnknownKey, 0, num_tokens));
  PAGODA_ASSIGN_OR_RETURN(vocab.add_bos, read_flag(file, kAddBosKey, true));
  PAGODA_ASSIGN_OR_RETURN(vocab.add_dummy_prefix, read_flag(file, kAddSpacePrefixKey, true));

  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::vector<int32_t>> types, file.get_i32_array(kTokenTypeKey));
  if (!types) {
    vocab.types = derive_types(vocab);
  } else {
    if (types->size() != vocab.pieces.size()) {
      return error(file, fmt::format("{} has {} entries, expected {} (one per token)", kTokenTypeKey, types->size(),
                                     num_tokens));
    }
    vocab.types.reserve(types->size());
    for (size_t id = 0; id < types->size(); ++id) {
      const int32_t type = (*types)[id];
      if (type < int32_t(TokenType::kUndefined) || type > int32_t(TokenType::kByte)) {
        return error(file, fmt::format("{}[{}] is {}, expected 0..6", kTokenTypeKey, id, type));
      }
      if (TokenType(type) == TokenType::kByte && !parse_byte_piece(vocab.pieces[id])) {
        return error(file, fmt::format("{}[{}] says byte but {}[{}] is '{}', not <0xNN>", kTokenTypeKey, id, kTokensKey,
                                       id, vocab.pieces[id]));
      }
      vocab.types.push_back(TokenType(type));
    }
  }

  if (vocab.unk_id == -1) {
    bool has_byte[256] = {};
    for (size_t id = 0; id < vocab.pieces.size(); ++id) {
      if (vocab.types[id] == TokenType::kByte) has_byte[*parse_byte_piece(vocab.pieces[id])] = true;
    }
    for (const bool present : has_byte) {
      if (!present) {
        return error(file, fmt::format("{} is -1 but the vocabulary lacks some <0xNN> byte pieces, so some text "
                                       "would have no encoding",
                                       kUnknownKey));
      }
    }
  }
  return vocab;
}

Result<BpeVocab> bpe_vocab_from_gguf(const format::GgufFile& file) {
  BpeVocab vocab;
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> tokens, file.get_string_array(kTokensKey));
  if (!tokens || tokens->empty()) return error(file, fmt::format("{} is missing or empty", kTokensKey));
  if (tokens->size() >= size_t(1) << 30) return error(file, fmt::format("{} has too many entries", kTokensKey));
  const auto num_tokens = int32_t(tokens->size());
  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> merges, file.get_string_array(kMergesKey));
  if (!merges) return error(file, fmt::format("{} is missing (byte-level BPE needs its merges)", kMergesKey));
  vocab.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string& text = (*merges)[i];
    const size_t space = text.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == text.size()) {
      return error(file, fmt::format("{}[{}] is '{}', not 'left right'", kMergesKey, i, text));
    }
    vocab.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
  }
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::string> pre, file.get_string(kPreKey));
  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::string> model, file.get_string(kModelKey));
  if (model == "gemma4") pre = "gemma4";  // llama.cpp: the model implies its pre-tokenizer, whatever the key says
  const LlamaPreTokenizer* spec = nullptr;
  if (!pre) {
    // llama.cpp's behaviour and warning: its "default" splits, which are not GPT-2's.
    std::fprintf(stderr,
                 "pagoda: warning: %s: %s is missing, using llama.cpp's 'default' pre-tokenizer; generation quality "
                 "will be degraded, consider regenerating the model\n",
                 file.name().c_str(), kPreKey);
    spec = &default_llama_pre_tokenizer();
  } else {
    spec = find_llama_pre_tokenizer(*pre);
  }
  if (spec == nullptr) {
    const std::string hint = *pre == "gpt2" ? " (llama.cpp's name for GPT-2's is 'gpt-2'; older pagoda wrote 'gpt2': "
                                              "convert the model again)"
                                            : "";
    return error(file, fmt::format("{} is '{}', a pre-tokenizer pagoda does not know{}; supported: {}", kPreKey, *pre,
                                   hint, supported_llama_pre_tokenizer_names()));
  }
  vocab.pre_name = std::string(spec->name);
  vocab.split_regexes.assign(spec->regexes.begin(), spec->regexes.end());
  vocab.regex_dialect = RegexDialect::kEcmaScript;
  vocab.ignore_merges = spec->ignore_merges;
  vocab.nfc = spec->nfc;
  vocab.byte_level = spec->byte_level;
  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::vector<int32_t>> types, file.get_i32_array(kTokenTypeKey));
  if (types && types->size() != tokens->size()) {
    return error(
        file, fmt::format("{} has {} entries, expected {} (one per token)", kTokenTypeKey, types->size(), num_tokens));
  }
  vocab.tokens = std::move(*tokens);
  // Control and user-defined tokens are matched in the text as written, like HF added tokens; their spelling
  // is literal text, not byte-level, so they leave the byte-level table.
  if (types) {
    for (size_t id = 0; id < types->size(); ++id) {
      const auto type = TokenType((*types)[id]);
      if (type == TokenType::kUnused) vocab.tokens[id].clear();  // "[PAD123]": an id the tokenizer never makes
      if (type != TokenType::kControl && type != TokenType::kUserDefined) continue;
      if (vocab.tokens[id].empty()) continue;
      vocab.added.push_back(AddedToken{TokenId(id), vocab.tokens[id], type == TokenType::kControl, false, false});
      vocab.tokens[id].clear();
    }
  }
  PAGODA_ASSIGN_OR_RETURN(vocab.bos_id, read_special_id(file, kBosKey, -1, num_tokens));
  PAGODA_ASSIGN_OR_RETURN(vocab.eos_id, read_special_id(file, kEosKey, -1, num_tokens));
  for (const char* key : {kEotKey, kEomKey}) {
    PAGODA_ASSIGN_OR_RETURN(const TokenId stop, read_special_id(file, key, -1, num_tokens));
    if (stop != -1 && stop != vocab.eos_id) vocab.stop_ids.push_back(stop);
  }
  // Without the key, llama.cpp's default for the name (BOS for Llama 3, tekken, chameleon); Gemma 4 always has BOS.
  PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> add_bos, file.get_bool(kAddBosKey));
  vocab.add_bos_set = add_bos.has_value();
  vocab.add_bos = add_bos && !spec->bos_always ? *add_bos : spec->add_bos && vocab.bos_id != -1;
  if (vocab.add_bos && vocab.bos_id == -1) {
    return error(file, fmt::format("{} is true but {} is absent", kAddBosKey, kBosKey));
  }
  PAGODA_ASSIGN_OR_RETURN(const std::optional<bool> add_eos, file.get_bool(format::gguf_key::kAddEos));
  vocab.add_eos = add_eos.value_or(false) && vocab.eos_id != -1;
  return vocab;
}

Result<WordPieceVocab> wordpiece_vocab_from_gguf(const format::GgufFile& file) {
  WordPieceVocab vocab;
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> tokens, file.get_string_array(kTokensKey));
  if (!tokens || tokens->empty()) return error(file, fmt::format("{} is missing or empty", kTokensKey));
  if (tokens->size() >= size_t(1) << 30) return error(file, fmt::format("{} has too many entries", kTokensKey));
  const auto num_tokens = int32_t(tokens->size());
  vocab.pieces = std::move(*tokens);
  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::vector<int32_t>> types, file.get_i32_array(kTokenTypeKey));
  if (types && types->size() != vocab.pieces.size()) {
    return error(
        file, fmt::format("{} has {} entries, expected {} (one per token)", kTokenTypeKey, types->size(), num_tokens));
  }
  vocab.types.assign(vocab.pieces.size(), TokenType::kNormal);
  if (types) {
    for (size_t id = 0; id < types->size(); ++id) {
      const int32_t type = (*types)[id];
      if (type < int32_t(TokenType::kUndefined) || type > int32_t(TokenType::kByte)) {
        return error(file, fmt::format("{}[{}] is {}, expected 0..6", kTokenTypeKey, id, type));
      }
      vocab.types[id] = TokenType(type);
    }
  }
  // A special id must name a token: [CLS] and [SEP] frame every input, [UNK] stands for unknown words.
  auto special = [&](const char* key, TokenId fallback) -> Result<TokenId> {
    PAGODA_ASSIGN_OR_RETURN(const TokenId id, read_special_id(file, key, fallback, num_tokens));
    if (id < 0 || id >= num_tokens) {
      return error(file, fmt::format("{} is {}, outside the vocabulary of {} tokens (a WordPiece vocabulary needs it)",
                                     key, id, num_tokens));
    }
    return id;
  };
  PAGODA_ASSIGN_OR_RETURN(const TokenId cls, special(format::gguf_key::kClsId, 101));
  PAGODA_ASSIGN_OR_RETURN(vocab.cls_id, special(kBosKey, cls));
  PAGODA_ASSIGN_OR_RETURN(vocab.sep_id, special(format::gguf_key::kSeparatorId, 102));
  PAGODA_ASSIGN_OR_RETURN(vocab.unk_id, special(kUnknownKey, 100));
  PAGODA_ASSIGN_OR_RETURN(vocab.pad_id, read_special_id(file, format::gguf_key::kPaddingId, 0, num_tokens));
  PAGODA_ASSIGN_OR_RETURN(vocab.lowercase, read_flag(file, format::gguf_key::kNormalizerLowercase, true));
  PAGODA_ASSIGN_OR_RETURN(vocab.strip_accents,
                          read_flag(file, format::gguf_key::kNormalizerStripAccents, vocab.lowercase));
  return vocab;
}

Result<std::unique_ptr<Tokenizer>> tokenizer_from_gguf(const format::GgufFile& file) {
  PAGODA_ASSIGN_OR_RETURN(const std::optional<std::string> model, file.get_string(kModelKey));
  if (!model) return error(file, fmt::format("{} is missing (which tokenizer the vocabulary is for)", kModelKey));
  if (*model == "gpt2" || *model == "gemma4") {
    PAGODA_ASSIGN_OR_RETURN(BpeVocab bpe, bpe_vocab_from_gguf(file));
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok, BpeTokenizer::create(std::move(bpe), file.name()));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  if (*model == "bert") {
    PAGODA_ASSIGN_OR_RETURN(WordPieceVocab wordpiece, wordpiece_vocab_from_gguf(file));
    return std::unique_ptr<Tokenizer>(std::make_unique<WordPieceTokenizer>(std::move(wordpiece)));
  }
  if (*model != "llama") {
    return error(file, fmt::format("{} is '{}'; only 'llama' (SentencePiece), 'gpt2' (byte-level BPE), 'gemma4' "
                                   "(UTF-8 BPE) and 'bert' (WordPiece) are supported",
                                   kModelKey, *model));
  }
  PAGODA_ASSIGN_OR_RETURN(Vocab vocab, vocab_from_gguf(file));
  return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(vocab)));
}

}  // namespace pagoda
