// Test helper: random text for the tokenizer property tests (valid UTF-8 mixing ASCII, spaces, newlines,
// punctuation and 2-, 3- and 4-byte characters; or raw bytes that are mostly not valid UTF-8).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace pagoda::testing {

// Appends the UTF-8 encoding of `code_point` (must be a Unicode scalar value).
void append_utf8(std::string& out, uint32_t code_point);

// Up to `max_chars` random characters, valid UTF-8; includes U+2581 now and then.
std::string random_utf8_text(std::mt19937& rng, int max_chars);

// Up to `max_bytes` uniformly random bytes.
std::string random_bytes(std::mt19937& rng, int max_bytes);

// `text` with every U+2581 replaced by a space: what decode(encode(text)) gives, since the encoder writes
// spaces as U+2581 and the decoder cannot tell the two apart (SentencePiece behaves the same).
std::string markers_to_spaces(const std::string& text);

}  // namespace pagoda::testing
