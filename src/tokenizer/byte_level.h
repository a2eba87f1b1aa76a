// Byte-level BPE's byte <-> character mapping (GPT-2's bytes_to_unicode): every byte becomes one printable
// Unicode character, so a vocabulary of strings can spell any byte sequence. Owns only the two fixed tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda {

// The code point byte `b` is spelled as: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order.
char32_t byte_level_char(uint8_t b);
// The byte a code point spells, or nullopt when it is not one of the 256 mapped characters.
std::optional<uint8_t> byte_level_byte(char32_t c);

// `bytes` spelled as byte-level characters (UTF-8 of one mapped code point per byte).
std::string byte_level_encode(std::string_view bytes);
// The bytes a byte-level spelling stands for. Characters outside the mapping (or malformed UTF-8) are kept
// as their own bytes, so decode never loses text.
std::string byte_level_decode(std::string_view spelled);

}  // namespace pagoda
