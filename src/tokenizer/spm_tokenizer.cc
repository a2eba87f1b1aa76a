// SpmTokenizer: SentencePiece BPE encoding (symbol list + max-heap of adjacent pairs, as llama.cpp's
// llm_tokenizer_spm does it) and decoding (U+2581 -> space, byte tokens -> raw bytes, leading space after BOS).
#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <queue>
#include <utility>

#include "core/check.h"
#include "tokenizer/byte_piece.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
// What SentencePiece's DecodeIds prints for an unknown token (its default unk_surface: " ⁇ ").
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";

std::string replace_space_markers(std::string_view piece) {
  std::string text;
  text.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      text += ' ';
      pos += kSpaceMarker.size();
    } else {
      text += piece[pos++];
    }
  }
  return text;
}

bool is_mergeable(TokenType type) { return type == TokenType::kNormal || type == TokenType::kUserDefined; }

bool id_in_range_or_unset(TokenId id, int32_t num_tokens) { return id == -1 || (id >= 0 && id < num_tokens); }

// One run of bytes of the normalized text; merging grows the left symbol and empties the right one.
struct Symbol {
  int32_t start;      // byte offset into the normalized text
  int32_t num_bytes;  // 0 once merged into its left neighbour
  int32_t prev_idx;   // -1 at the front
  int32_t next_idx;   // -1 at the back
};

// A candidate merge of two adjacent symbols. Stale entries (a side merged away or grown since) are skipped
// when popped, which is cheaper than removing them from the heap.
struct Bigram {
  int32_t left_idx;
  int32_t right_idx;
  float score;
  int32_t num_bytes;  // of the merged piece; detects that a side changed after the push
};

// Max-heap order: higher score first; equal scores merge the leftmost pair first (symbol indices grow left
// to right and a merged symbol keeps its left index, so a smaller index is further left).
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left_idx > b.left_idx);
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  const int32_t num_tokens = vocab_.size();
  PAGODA_CHECK(vocab_.scores.size() == vocab_.pieces.size() && vocab_.types.size() == vocab_.pieces.size(),
               "vocab has {} pieces, {} scores and {} types; vocab_from_gguf validates this", vocab_.pieces.size(),
               vocab_.scores.size(), vocab_.types.size());
  PAGODA_CHECK(id_in_range_or_unset(vocab_.bos_id, num_tokens) && id_in_range_or_unset(vocab_.eos_id, num_tokens) &&
                   id_in_range_or_unset(vocab_.unk_id, num_tokens),
               "special ids bos={} eos={} unk={} must be -1 or below the vocab size {}", vocab_.bos_id, vocab_.eos_id,
               vocab_.unk_id, num_tokens);

  for (TokenId& id : byte_to_id_) id = -1;
  piece_to_id_.reserve(size_t(num_tokens));
  token_texts_.resize(size_t(num_tokens));
  for (TokenId id = 0; id < num_tokens; ++id) {
    const std::string& piece = vocab_.pieces[size_t(id)];
    const TokenType type = vocab_.types[size_t(id)];
    if (is_mergeable(type)) {
      piece_to_id_.emplace(piece, id);  // a duplicate spelling keeps its lowest id
    }
    switch (type) {
      case TokenType::kByte: {
        const std::optional<uint8_t> byte = parse_byte_piece(piece);
        PAGODA_CHECK(byte.has_value(), "token {} has type byte but its piece '{}' is not <0xNN>", id, piece);
        if (byte_to_id_[*byte] == -1) byte_to_id_[*byte] = id;
        token_texts_[size_t(id)] = std::string(1, char(*byte));
        break;
      }
      case TokenType::kUnknown: token_texts_[size_t(id)] = std::string(kUnknownSurface); break;
      case TokenType::kControl:
      case TokenType::kUnused: break;  // decode to nothing
      case TokenType::kUndefined:
      case TokenType::kNormal:
      case TokenType::kUserDefined: token_texts_[size_t(id)] = replace_space_markers(piece); break;
    }
  }

  for (TokenId id = 0; id < num_tokens; ++id) {
    const TokenType type = vocab_.types[size_t(id)];
    if ((type == TokenType::kControl || type == TokenType::kUnknown) && !vocab_.pieces[size_t(id)].empty()) {
      control_ids_.push_back(id);
    }
  }
  std::stable_sort(control_ids_.begin(), control_ids_.end(), [&](TokenId a, TokenId b) {
    return vocab_.pieces[size_t(a)].size() > vocab_.pieces[size_t(b)].size();
  });

  bool has_all_byte_pieces = true;
  for (TokenId id : byte_to_id_) has_all_byte_pieces = has_all_byte_pieces && id != -1;
  PAGODA_CHECK(has_all_byte_pieces || vocab_.unk_id != -1,
               "the vocab has neither all 256 <0xNN> byte pieces nor an unknown id, so some text has no encoding");
}

TokenId SpmTokenizer::find_piece(std::string_view piece) const {
  const auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> ids;
  if (add_bos && vocab_.bos_id != -1) ids.push_back(vocab_.bos_id);
  // As llama.cpp: no dummy prefix for empty text, so "" encodes to nothing (or just BOS).
  if (text.empty()) return ids;
  if (!parse_special || control_ids_.empty()) {
    encode_fragment(text, vocab_.add_dummy_prefix, ids);
    return ids;
  }
  // llama.cpp's partition: control tokens split the text, and each piece of text between them (every one
  // follows a special token or the start) gets the dummy prefix.
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    TokenId match = -1;
    for (const TokenId id : control_ids_) {
      if (text.substr(pos).starts_with(vocab_.pieces[size_t(id)])) {
        match = id;
        break;
      }
    }
    if (match == -1) {
      ++pos;
      continue;
    }
    if (pos > plain_start) {
      encode_fragment(text.substr(plain_start, pos - plain_start), vocab_.add_dummy_prefix, ids);
    }
    ids.push_back(match);
    pos += vocab_.pieces[size_t(match)].size();
    plain_start = pos;
  }
  if (plain_start < text.size()) {
    encode_fragment(text.substr(plain_start), vocab_.add_dummy_prefix, ids);
  }
  return ids;
}

void SpmTokenizer::encode_fragment(std::string_view text, bool dummy_prefix, std::vector<TokenId>& ids) const {
  std::string normalized;  // the text with the dummy prefix and every space as U+2581
  normalized.reserve(text.size() + kSpaceMarker.size() * 2);
  if (dummy_prefix) normalized += kSpaceMarker;
  for (const char c : text) {
    if (c == ' ') {
      normalized += kSpaceMarker;
    } else {
      normalized += c;
    }
  }
  PAGODA_CHECK(normalized.size() < size_t(INT32_MAX), "text of {} bytes is too long to encode", text.size());

  // One symbol per UTF-8 character; each byte that is not part of a valid character is a symbol of its own.
  std::vector<Symbol> symbols;
  symbols.reserve(normalized.size());
  for (size_t pos = 0; pos < normalized.size();) {
    size_t num_bytes = utf8_char_length(normalized, pos);
    if (num_bytes == 0) num_bytes = 1;
    const auto idx = int32_t(symbols.size());
    symbols.push_back(Symbol{int32_t(pos), int32_t(num_bytes), idx - 1, idx + 1});
    pos += num_bytes;
  }
  symbols.back().next_idx = -1;

  const std::string_view all(normalized);
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto push_bigram = [&](int32_t left_idx, int32_t right_idx) {
    if (left_idx == -1 || right_idx == -1) return;
    const Symbol& left = symbols[size_t(left_idx)];
    const Symbol& right = symbols[size_t(right_idx)];
    const int32_t num_bytes = left.num_bytes + right.num_bytes;
    const TokenId id = find_piece(all.substr(size_t(left.start), size_t(num_bytes)));
    if (id == -1) return;
    queue.push(Bigram{left_idx, right_idx, vocab_.scores[size_t(id)], num_bytes});
  };
  for (size_t idx = 1; idx < symbols.size(); ++idx) push_bigram(int32_t(idx - 1), int32_t(idx));

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[size_t(bigram.left_idx)];
    Symbol& right = symbols[size_t(bigram.right_idx)];
    if (left.num_bytes == 0 || right.num_bytes == 0 || left.next_idx != bigram.right_idx ||
        left.num_bytes + right.num_bytes != bigram.num_bytes) {
      continue;  // stale: one side was merged into something else since this pair was pushed
    }
    left.num_bytes += right.num_bytes;
    right.num_bytes = 0;
    left.next_idx = right.next_idx;
    if (right.next_idx != -1) symbols[size_t(right.next_idx)].prev_idx = bigram.left_idx;
    push_bigram(left.prev_idx, bigram.left_idx);
    push_bigram(bigram.left_idx, left.next_idx);
  }

  for (int32_t idx = 0; idx != -1; idx = symbols[size_t(idx)].next_idx) {
    const Symbol& symbol = symbols[size_t(idx)];
    const std::string_view piece = all.substr(size_t(symbol.start), size_t(symbol.num_bytes));
    const TokenId id = find_piece(piece);
    if (id != -1) {
      ids.push_back(id);
      continue;
    }
    // Byte fallback: the symbol's bytes as <0xNN> tokens; one UNK for the whole symbol (as SentencePiece does
    // for an unknown character) when any of its bytes has no byte piece.
    bool all_bytes_known = true;
    for (const char c : piece) all_bytes_known = all_bytes_known && byte_to_id_[uint8_t(c)] != -1;
    if (all_bytes_known) {
      for (const char c : piece) ids.push_back(byte_to_id_[uint8_t(c)]);
    } else {
      ids.push_back(vocab_.unk_id);
    }
  }
}

std::string SpmTokenizer::token_bytes(TokenId token, TokenId prev) const {
  PAGODA_CHECK(token >= 0 && token < vocab_.size(), "token id {} is outside the vocabulary [0, {})", token,
               vocab_.size());
  const std::string& text = token_texts_[size_t(token)];
  // The dummy prefix put a space before the first word; SentencePiece (and llama2.c) drop it again right
  // after BOS. Only for normal pieces: a byte token 0x20 is a space the text itself had.
  const TokenType type = vocab_.types[size_t(token)];
  if (vocab_.add_dummy_prefix && prev != -1 && prev == vocab_.bos_id && type != TokenType::kByte &&
      type != TokenType::kUnknown && !text.empty() && text[0] == ' ') {
    return text.substr(1);
  }
  return text;
}

bool SpmTokenizer::is_control(TokenId token) const {
  PAGODA_CHECK(token >= 0 && token < vocab_.size(), "token id {} is outside the vocabulary [0, {})", token,
               vocab_.size());
  return vocab_.types[size_t(token)] == TokenType::kControl;
}

}  // namespace pagoda
