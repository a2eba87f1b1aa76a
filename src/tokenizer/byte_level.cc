// The GPT-2 byte <-> unicode tables, built once on first use (a function-local constant, not mutable state).
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

struct ByteLevelTables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<int16_t, 324> char_to_byte{};  // the mapped code points all lie below U+0144
};

ByteLevelTables build_tables() {
  ByteLevelTables t;
  t.char_to_byte.fill(-1);
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = printable(b) ? char32_t(b) : next++;
    t.byte_to_char[size_t(b)] = c;
    t.char_to_byte[size_t(c)] = int16_t(b);
  }
  return t;
}

const ByteLevelTables& tables() {
  static const ByteLevelTables t = build_tables();
  return t;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else {  // every mapped character is below U+0800: two bytes
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  }
}

}  // namespace

char32_t byte_level_char(uint8_t b) { return tables().byte_to_char[b]; }

std::optional<uint8_t> byte_level_byte(char32_t c) {
  if (c >= tables().char_to_byte.size()) return std::nullopt;
  const int16_t b = tables().char_to_byte[size_t(c)];
  if (b < 0) return std::nullopt;
  return uint8_t(b);
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) append_utf8(out, byte_level_char(uint8_t(b)));
  return out;
}

std::string byte_level_decode(std::string_view spelled) {
  std::string out;
  out.reserve(spelled.size());
  size_t pos = 0;
  while (pos < spelled.size()) {
    const size_t len = utf8_char_length(spelled, pos);
    if (len == 0) {
      out += spelled[pos++];
      continue;
    }
    char32_t c = 0;
    const auto lead = uint8_t(spelled[pos]);
    if (len == 1) {
      c = lead;
    } else if (len == 2) {
      c = char32_t(lead & 0x1F) << 6 | char32_t(uint8_t(spelled[pos + 1]) & 0x3F);
    }
    const std::optional<uint8_t> b = len <= 2 ? byte_level_byte(c) : std::nullopt;
    if (b) {
      out += char(*b);
    } else {
      out.append(spelled.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace pagoda
