// BpeTokenizer: Hugging Face / GPT-2 style byte-level BPE over a BpeVocab: added tokens matched first
// (leftmost-longest), optional NFC, the split regex, bytes spelled as byte-level characters, then merges by
// rank. A harmony vocabulary (gpt-oss's) ends generation at <|return|> and <|call|>, not <|end|>, and decodes its
// message markers to their text. Immutable and thread-safe after create.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_vocab.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

class BpeTokenizer final : public Tokenizer {
 public:
  // Fails when a merge names a token the vocabulary lacks, an id is out of range, or a split regex does not
  // compile (a byte without a token is allowed, as llama.cpp allows it); `source` (a file name) prefixes the message.
  static Result<std::unique_ptr<BpeTokenizer>> create(BpeVocab vocab, std::string_view source);

  using Tokenizer::encode;
  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
  std::string token_bytes(TokenId token, TokenId prev) const override;
  int32_t vocab_size() const override { return int32_t(vocab_.tokens.size()); }
  TokenId bos_id() const override { return vocab_.bos_id; }
  TokenId eos_id() const override { return vocab_.eos_id; }
  bool ends_generation(TokenId token) const override;
  bool is_control(TokenId token) const override;
  const BpeVocab& vocab() const { return vocab_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int32_t rank;
    TokenId merged;
  };

  BpeTokenizer(BpeVocab vocab, PreTokenizer pre);
  // Encodes text that holds no added token: NFC, split, BPE per piece.
  void encode_plain(std::string_view text, std::vector<TokenId>& out) const;
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
  // A piece of a UTF-8 (not byte-level) vocabulary: characters merged, unknown ones as <0xNN> byte tokens.
  void encode_utf8_piece(std::string_view piece, std::vector<TokenId>& out) const;
  // Applies merges to `symbols` (-1 never merges); `texts`, when given, keeps each symbol's text in step.
  void merge_by_rank(std::vector<TokenId>& symbols, std::vector<std::string_view>* texts) const;

  BpeVocab vocab_;
  PreTokenizer pre_;
  std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> token_to_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  TokenId byte_to_id_[256];  // -1 for a byte the vocabulary has no token for
  std::vector<std::vector<size_t>> added_by_first_byte_;  // [byte] indices into vocab_.added, longest first
  std::vector<int8_t> added_kind_;                        // [id] 0 normal, 1 added non-special, 2 special
};

}  // namespace pagoda
