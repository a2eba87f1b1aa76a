// parse_byte_piece: recognises SentencePiece's byte-fallback piece spelling "<0xNN>" (one per byte value).
// Shared by SpmTokenizer (byte table) and vocab_from_gguf (deriving token types when a file has none).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

// The byte a piece "<0xNN>" stands for (NN: two hex digits, either case), or nullopt for any other piece.
inline std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  auto hex_value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int high = hex_value(piece[3]);
  const int low = hex_value(piece[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return uint8_t(high * 16 + low);
}

}  // namespace pagoda
