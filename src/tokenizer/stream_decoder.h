// StreamDecoder: turns a stream of token ids into UTF-8 text pieces, holding back an incomplete UTF-8 sequence
// until its last byte arrives (byte-fallback tokens split characters across tokens). Owns only that tail.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace pagoda {

class StreamDecoder {
 public:
  // `prev` starts as the last prompt token (usually BOS), so the first piece's leading space is handled as
  // in Tokenizer::decode.
  explicit StreamDecoder(const Tokenizer& tokenizer, TokenId prev = -1);
  // The text that became complete with `token` (possibly empty).
  std::string push(TokenId token);
  // Whatever is still held back (an incomplete sequence at the end of the stream), as-is.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  TokenId prev_;
  std::string pending_;  // bytes of an unfinished UTF-8 character
};

}  // namespace pagoda
