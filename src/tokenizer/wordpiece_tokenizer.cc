// WordPieceTokenizer: the BERT normalizer and pre-tokenizer over code points (ICU's character properties, case
// mapping and NFD), the greedy longest-piece match of each word, and decoding.
#include "tokenizer/wordpiece_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/check.h"

namespace pagoda {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, marks a word-initial piece

// HF's _is_chinese_char ranges as llama.cpp has them (its 0x2B920 start follows HF's Rust code).
bool is_cjk_ideograph(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punctuation(int8_t type) {
  return type == U_CONNECTOR_PUNCTUATION || type == U_DASH_PUNCTUATION || type == U_START_PUNCTUATION ||
         type == U_END_PUNCTUATION || type == U_INITIAL_PUNCTUATION || type == U_FINAL_PUNCTUATION ||
         type == U_OTHER_PUNCTUATION;
}

bool is_symbol(int8_t type) {
  return type == U_MATH_SYMBOL || type == U_CURRENCY_SYMBOL || type == U_MODIFIER_SYMBOL || type == U_OTHER_SYMBOL;
}

// \p{C} less unassigned code points (llama.cpp's table leaves those undefined, so they stay in words).
bool is_control_char(int8_t type) {
  return type == U_CONTROL_CHAR || type == U_FORMAT_CHAR || type == U_SURROGATE || type == U_PRIVATE_USE_CHAR;
}

bool is_mark(int8_t type) {
  return type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK || type == U_COMBINING_SPACING_MARK;
}

// The first code point of `c`'s canonical decomposition (llama.cpp's NFD table keeps only that one: the marks
// after it would be stripped anyway).
UChar32 nfd_first(const icu::Normalizer2& nfd, UChar32 c) {
  icu::UnicodeString decomposition;
  if (!nfd.getDecomposition(c, decomposition) || decomposition.isEmpty()) return c;
  return decomposition.char32At(0);
}

void append_code_point(std::string& out, UChar32 c) {
  char buf[U8_MAX_LENGTH];
  int32_t length = 0;
  UBool error = false;
  U8_APPEND(reinterpret_cast<uint8_t*>(buf), length, U8_MAX_LENGTH, c, error);
  if (!error) out.append(buf, size_t(length));
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(WordPieceVocab vocab) : vocab_(std::move(vocab)) {
  const int32_t num_tokens = vocab_.size();
  PAGODA_CHECK(vocab_.types.size() == vocab_.pieces.size(), "vocab has {} pieces and {} types",
               vocab_.pieces.size(), vocab_.types.size());
  for (const TokenId id : {vocab_.cls_id, vocab_.sep_id, vocab_.unk_id}) {
    PAGODA_CHECK(id >= 0 && id < num_tokens, "special id {} is outside the vocabulary of {} tokens", id, num_tokens);
  }
  piece_to_id_.reserve(size_t(num_tokens));
  for (TokenId id = 0; id < num_tokens; ++id) {
    const std::string& piece = vocab_.pieces[size_t(id)];
    if (piece.empty()) continue;
    piece_to_id_.insert_or_assign(piece, id);  // as llama.cpp's token_to_id: a repeated spelling keeps its last id
    max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    const TokenType type = vocab_.types[size_t(id)];
    if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUserDefined) {
      special_ids_.push_back(id);
    }
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](TokenId a, TokenId b) {
    return vocab_.pieces[size_t(a)].size() > vocab_.pieces[size_t(b)].size();
  });
}

std::vector<std::string> WordPieceTokenizer::split_words(std::string_view text) const {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = vocab_.strip_accents ? icu::Normalizer2::getNFDInstance(status) : nullptr;
  PAGODA_CHECK(U_SUCCESS(status), "ICU has no NFD normalizer: {}", u_errorName(status));
  std::vector<std::string> words(1);
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const auto length = int32_t(std::min<size_t>(text.size(), INT32_MAX));
  for (int32_t pos = 0; pos < length;) {
    UChar32 c = 0;
    U8_NEXT(bytes, pos, length, c);
    if (c < 0) continue;  // an invalid byte: llama.cpp's U+FFFD, which is dropped
    if (nfd != nullptr) c = nfd_first(*nfd, c);
    if (u_isUWhiteSpace(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const auto type = int8_t(u_charType(c));
    if (c == 0 || c == 0xFFFD || is_control_char(type)) continue;
    if (vocab_.strip_accents && is_mark(type)) continue;
    const UChar32 out = vocab_.lowercase ? u_tolower(c) : c;
    if (is_punctuation(type) || (c < 0x7F && is_symbol(type)) || is_cjk_ideograph(c)) {
      if (!words.back().empty()) words.emplace_back();
      append_code_point(words.back(), out);
      words.emplace_back();
    } else {
      append_code_point(words.back(), out);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WordPieceTokenizer::encode_word(std::string_view word, std::vector<TokenId>& ids) const {
  if (vocab_.max_word_chars > 0) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(word.data());
    int32_t chars = 0;
    for (size_t pos = 0; pos < word.size(); ++pos) chars += (bytes[pos] & 0xC0) != 0x80;
    if (chars > vocab_.max_word_chars) {
      ids.push_back(vocab_.unk_id);
      return;
    }
  }
  std::string marked;
  marked.reserve(kWordStart.size() + word.size());
  marked += kWordStart;
  marked += word;
  const std::string_view all(marked);
  const size_t first = ids.size();
  // Longest piece first at each position; a position no piece starts at makes the whole word [UNK].
  for (size_t start = 0; start < all.size();) {
    bool matched = false;
    for (size_t end = std::min(all.size(), start + max_piece_bytes_); end > start; --end) {
      const auto it = piece_to_id_.find(all.substr(start, end - start));
      if (it == piece_to_id_.end()) continue;
      ids.push_back(it->second);
      start = end;
      matched = true;
      break;
    }
    if (!matched) {
      ids.resize(first);
      break;
    }
  }
  if (ids.size() == first) ids.push_back(vocab_.unk_id);
}

void WordPieceTokenizer::encode_fragment(std::string_view text, std::vector<TokenId>& ids) const {
  for (const std::string& word : split_words(text)) encode_word(word, ids);
}

std::vector<TokenId> WordPieceTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> ids;
  if (add_bos) ids.push_back(vocab_.cls_id);
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    TokenId match = -1;
    for (const TokenId id : special_ids_) {
      if ((parse_special || vocab_.types[size_t(id)] == TokenType::kUserDefined) &&
          text.substr(pos).starts_with(vocab_.pieces[size_t(id)])) {
        match = id;
        break;
      }
    }
    if (match == -1) {
      ++pos;
      continue;
    }
    if (pos > plain_start) encode_fragment(text.substr(plain_start, pos - plain_start), ids);
    ids.push_back(match);
    pos += vocab_.pieces[size_t(match)].size();
    plain_start = pos;
  }
  if (plain_start < text.size()) encode_fragment(text.substr(plain_start), ids);
  if (add_bos) ids.push_back(vocab_.sep_id);
  return ids;
}

std::string WordPieceTokenizer::token_bytes(TokenId token, TokenId prev) const {
  PAGODA_CHECK(token >= 0 && token < vocab_.size(), "token id {} is outside the vocabulary [0, {})", token,
               vocab_.size());
  const TokenType type = vocab_.types[size_t(token)];
  if (type == TokenType::kControl || type == TokenType::kUnused) return "";
  const std::string& piece = vocab_.pieces[size_t(token)];
  if (type == TokenType::kUnknown || type == TokenType::kUserDefined) return piece;
  if (!piece.starts_with(kWordStart)) return piece;
  const bool first_word = prev == -1 || prev == vocab_.cls_id;
  return (first_word ? "" : " ") + piece.substr(kWordStart.size());
}

bool WordPieceTokenizer::is_control(TokenId token) const {
  PAGODA_CHECK(token >= 0 && token < vocab_.size(), "token id {} is outside the vocabulary [0, {})", token,
               vocab_.size());
  return vocab_.types[size_t(token)] == TokenType::kControl;
}

}  // namespace pagoda
