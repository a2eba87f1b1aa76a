// Random text generators for the tokenizer property tests.
#include "test_text.h"

namespace pagoda::testing {

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += char(code_point);
  } else if (code_point < 0x800) {
    out += char(0xC0 | (code_point >> 6));
    out += char(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += char(0xE0 | (code_point >> 12));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  } else {
    out += char(0xF0 | (code_point >> 18));
    out += char(0x80 | ((code_point >> 12) & 0x3F));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  }
}

std::string random_utf8_text(std::mt19937& rng, int max_chars) {
  static const std::string kAsciiPool =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?;:'\"-()[]<>/\\&%$#@*+=~`|^_{}";
  static const uint32_t kPicked[] = {0xE9,   0xEF,   0xF1,   0xE2,   0xA0,    0x2019,  0x201C, 0x201D, 0x2014,
                                     0x2026, 0x65E5, 0x672C, 0x2581, 0x1F600, 0x10348, 0x20AC, 0x2122, 0x200A};
  std::uniform_int_distribution<int> num_chars_dist(0, max_chars);
  std::uniform_int_distribution<int> kind_dist(0, 99);
  const int num_chars = num_chars_dist(rng);
  std::string text;
  for (int i = 0; i < num_chars; ++i) {
    const int kind = kind_dist(rng);
    if (kind < 50) {
      text += kAsciiPool[std::uniform_int_distribution<size_t>(0, kAsciiPool.size() - 1)(rng)];
    } else if (kind < 62) {
      text += ' ';
    } else if (kind < 66) {
      text += kind < 64 ? '\n' : '\t';
    } else if (kind < 80) {
      append_utf8(text, kPicked[std::uniform_int_distribution<size_t>(0, std::size(kPicked) - 1)(rng)]);
    } else if (kind < 90) {
      append_utf8(text, std::uniform_int_distribution<uint32_t>(0x80, 0x7FF)(rng));
    } else {
      // Any scalar value: skip the surrogate block, which UTF-8 cannot encode.
      uint32_t code_point = std::uniform_int_distribution<uint32_t>(0x800, 0x10FFFF - 0x800)(rng);
      if (code_point >= 0xD800) code_point += 0x800;
      append_utf8(text, code_point);
    }
  }
  return text;
}

std::string random_bytes(std::mt19937& rng, int max_bytes) {
  const int num_bytes = std::uniform_int_distribution<int>(0, max_bytes)(rng);
  std::uniform_int_distribution<int> byte_dist(0, 255);
  std::string bytes;
  for (int i = 0; i < num_bytes; ++i) bytes += char(byte_dist(rng));
  return bytes;
}

std::string markers_to_spaces(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      pos += 3;
    } else {
      out += text[pos++];
    }
  }
  return out;
}

}  // namespace pagoda::testing
