// utf8_char_length / utf8_incomplete_tail: strict UTF-8 sequence checks shared by encoding (splitting text
// into characters) and streaming decode (holding back a split character).
#include "tokenizer/utf8.h"

#include <cstdint>

namespace pagoda {
namespace {

// Length a lead byte announces, or 0 for bytes that cannot start a character (continuations, C0, C1, F5..FF).
size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The second byte's allowed range is narrower after some lead bytes: that is what excludes overlong forms
// (E0, F0), UTF-16 surrogates (ED) and code points past U+10FFFF (F4).
bool second_byte_ok(uint8_t lead, uint8_t second) {
  switch (lead) {
    case 0xE0: return second >= 0xA0 && second <= 0xBF;
    case 0xED: return second >= 0x80 && second <= 0x9F;
    case 0xF0: return second >= 0x90 && second <= 0xBF;
    case 0xF4: return second >= 0x80 && second <= 0x8F;
    default: return second >= 0x80 && second <= 0xBF;
  }
}

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

size_t utf8_char_length(std::string_view text, size_t pos) {
  const auto lead = uint8_t(text[pos]);
  const size_t length = sequence_length(lead);
  if (length <= 1) return length;
  if (length > text.size() - pos) return 0;
  if (!second_byte_ok(lead, uint8_t(text[pos + 1]))) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!is_continuation(uint8_t(text[pos + i]))) return 0;
  }
  return length;
}

size_t utf8_incomplete_tail(std::string_view text) {
  // A character is at most 4 bytes, so an unfinished one has its lead byte within the last 3.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const size_t lead_pos = text.size() - back;
    const auto lead = uint8_t(text[lead_pos]);
    if (is_continuation(lead)) continue;
    if (sequence_length(lead) <= back) return 0;  // complete, or not a lead byte at all
    if (back >= 2 && !second_byte_ok(lead, uint8_t(text[lead_pos + 1]))) return 0;
    return back;
  }
  return 0;
}

}  // namespace pagoda
