// SpmTokenizer: SentencePiece BPE (llama.cpp's "llama" tokenizer model) over a Vocab: add-dummy-prefix,
// spaces as U+2581, greedy highest-score pair merging, byte fallback (<0xNN> pieces), BOS/EOS/UNK.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace pagoda {

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);

  using Tokenizer::encode;
  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
  std::string token_bytes(TokenId token, TokenId prev) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  TokenId bos_id() const override { return vocab_.bos_id; }
  TokenId eos_id() const override { return vocab_.eos_id; }
  bool ends_generation(TokenId token) const override { return token >= 0 && token == vocab_.eos_id; }
  bool is_control(TokenId token) const override;
  const Vocab& vocab() const { return vocab_; }

 private:
  // Lets piece_to_id_ be probed with a string_view into the text being encoded, without a copy per probe.
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view piece) const { return std::hash<std::string_view>{}(piece); }
  };

  // Appends the tokens of `text`, which holds no control token to match; `dummy_prefix` puts a space first.
  void encode_fragment(std::string_view text, bool dummy_prefix, std::vector<TokenId>& ids) const;
  // Id of the mergeable (normal or user-defined) piece spelled `piece`, or -1.
  TokenId find_piece(std::string_view piece) const;

  Vocab vocab_;
  // Only normal and user-defined pieces: text never turns into a control, unknown or byte token by spelling.
  std::unordered_map<std::string, TokenId, PieceHash, std::equal_to<>> piece_to_id_;
  TokenId byte_to_id_[256];               // -1 when the vocabulary has no <0xNN> piece for that byte
  std::vector<std::string> token_texts_;
  std::vector<TokenId> control_ids_;  // control and unknown tokens with a spelling, longest first (matched when parse_special)  // [vocab] each token's decoded bytes when not right after BOS
};

}  // namespace pagoda
