// StreamDecoder: appends each token's bytes and releases everything except a trailing UTF-8 character that
// has started but not finished, so a consumer never sees half of a character split across byte tokens.
#include "tokenizer/stream_decoder.h"

#include <utility>

#include "tokenizer/utf8.h"

namespace pagoda {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, TokenId prev) : tokenizer_(tokenizer), prev_(prev) {}

std::string StreamDecoder::push(TokenId token) {
  pending_ += tokenizer_.token_bytes(token, prev_);
  prev_ = token;
  // Only a tail that can still become a valid character waits; bytes that never can (a stray continuation,
  // a broken sequence) pass through at once rather than being held until flush().
  const size_t num_held = utf8_incomplete_tail(pending_);
  if (num_held == 0) return std::exchange(pending_, std::string());
  std::string ready = pending_.substr(0, pending_.size() - num_held);
  pending_.erase(0, pending_.size() - num_held);
  return ready;
}

std::string StreamDecoder::flush() { return std::exchange(pending_, std::string()); }

}  // namespace pagoda
