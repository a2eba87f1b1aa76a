// UTF-8 helpers for the tokenizer: the length of one valid character at a position, and the length of a
// trailing character that has begun but not ended. Strict UTF-8 (RFC 3629): no overlong forms, no surrogates,
// nothing past U+10FFFF, so every byte the helpers reject is one a decoder would also reject.
#pragma once

#include <cstddef>
#include <string_view>

namespace pagoda {

// Bytes (1..4) of the valid UTF-8 character starting at text[pos], or 0 when the bytes there are not one
// (a stray continuation byte, a bad lead byte, a truncated or malformed sequence). Requires pos < text.size().
size_t utf8_char_length(std::string_view text, size_t pos);

// Bytes (0..3) at the end of `text` that start a character that is valid so far but still lacks its last
// byte(s). 0 when `text` ends in a complete character or in bytes that can never become one.
size_t utf8_incomplete_tail(std::string_view text);

}  // namespace pagoda
