// Tokenizer: text <-> token ids. The interface the CLI, engine and server use; implementations own their
// lookup tables and are immutable (thread-safe) after construction.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace pagoda {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Encodes `text`; prepends BOS when `add_bos` (and the vocabulary has one). With `parse_special`, the text of
  // a special (control) token written in `text` becomes that token; without it (llama.cpp's parse_special =
  // false) it is plain text. Added tokens that are not special are matched either way. Never fails: bytes
  // without a piece become byte-fallback tokens (or UNK when the vocabulary has none).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const = 0;
  // Special tokens written in the text are tokens (llama.cpp's default for prompts).
  std::vector<TokenId> encode(std::string_view text, bool add_bos) const { return encode(text, add_bos, true); }
  // The raw bytes of one token as it appears inside a decoded text (byte tokens give their single byte,
  // U+2581 becomes a space, control tokens give ""). `prev` is the token before it, or -1: SentencePiece drops
  // the leading space of the first piece after BOS.
  virtual std::string token_bytes(TokenId token, TokenId prev) const = 0;
  // Decodes a whole id sequence: each token's bytes after the one before it, joined (may end in an incomplete UTF-8
  // sequence only if the ids do).
  virtual std::string decode(std::span<const TokenId> tokens) const {
    std::string text;
    TokenId prev = -1;
    for (const TokenId token : tokens) {
      text += token_bytes(token, prev);
      prev = token;
    }
    return text;
  }

  virtual int32_t vocab_size() const = 0;
  virtual TokenId bos_id() const = 0;
  virtual TokenId eos_id() const = 0;
  // True for EOS and for the end-of-turn tokens a chat model ends its reply with (<|eot_id|>, <|im_end|>, ...):
  // generation stops at any of them.
  virtual bool ends_generation(TokenId token) const = 0;
  virtual bool is_control(TokenId token) const = 0;
};

}  // namespace pagoda
