// WordPieceTokenizer: BERT's tokenizer (llama.cpp's "bert" tokenizer model, HF's WordPiece) over a
// WordPieceVocab: BertNormalizer and BertPreTokenizer (whitespace split, lowercasing and accent stripping per the
// vocabulary's flags, every punctuation mark, ASCII symbol and CJK ideograph a word of its own, control characters
// dropped), then the longest piece first within each word, [UNK] for a word that has no spelling. Immutable
// (thread-safe) after construction; it owns its lookup table and does not read files.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece_vocab.h"

namespace pagoda {

class WordPieceTokenizer final : public Tokenizer {
 public:
  explicit WordPieceTokenizer(WordPieceVocab vocab);

  using Tokenizer::encode;
  // `add_bos` is llama.cpp's add_special for BERT: [CLS] first and [SEP] last.
  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
  // A word-initial piece gives a space and its text, a continuation its text; control tokens give "". The
  // space of the first word (no token before, or [CLS]) is dropped.
  std::string token_bytes(TokenId token, TokenId prev) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  TokenId bos_id() const override { return vocab_.cls_id; }
  TokenId eos_id() const override { return vocab_.sep_id; }
  // An encoder's vocabulary: nothing ends a generation (encoder models do not generate).
  bool ends_generation(TokenId) const override { return false; }
  bool is_control(TokenId token) const override;
  const WordPieceVocab& vocab() const { return vocab_; }

  // The normalized words of `text` (exposed for tests): what the pieces are matched within.
  std::vector<std::string> split_words(std::string_view text) const;

 private:
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view piece) const { return std::hash<std::string_view>{}(piece); }
  };

  void encode_fragment(std::string_view text, std::vector<TokenId>& ids) const;
  void encode_word(std::string_view word, std::vector<TokenId>& ids) const;

  WordPieceVocab vocab_;
  std::unordered_map<std::string, TokenId, PieceHash, std::equal_to<>> piece_to_id_;
  size_t max_piece_bytes_ = 0;
  std::vector<TokenId> special_ids_;  // control, unknown and user-defined tokens, longest first
};

}  // namespace pagoda
