// utf8::next: the canonical UTF-8 decoder as a byte automaton (well-formed sequences only: no overlongs, no
// surrogates, nothing above U+10FFFF), shared by the vocabulary (which subtrees of its trie are well-formed text)
// and the per-state mask builder (which grammar states take every well-formed character and come back). Pure
// functions of a byte; no state of its own.
#pragma once

#include <cstdint>

namespace pagoda::grammar {

namespace utf8 {

inline constexpr uint8_t kBoundary = 0;  // between characters
inline constexpr uint8_t kNumStates = 8;
inline constexpr uint8_t kDead = 0xFF;

// The decoder state after `byte` in `state` (kDead: not well-formed). States: 0 boundary; 1, 2, 3 continuation
// bytes still due; 4 after E0 (A0..BF next), 5 after ED (80..9F), 6 after F0 (90..BF), 7 after F4 (80..8F).
constexpr uint8_t next(uint8_t state, uint8_t byte) {
  const bool cont = byte >= 0x80 && byte <= 0xBF;
  switch (state) {
    case 0:
      if (byte < 0x80) return 0;
      if (byte >= 0xC2 && byte <= 0xDF) return 1;
      if (byte == 0xE0) return 4;
      if (byte == 0xED) return 5;
      if (byte >= 0xE1 && byte <= 0xEF) return 2;
      if (byte == 0xF0) return 6;
      if (byte >= 0xF1 && byte <= 0xF3) return 3;
      if (byte == 0xF4) return 7;
      return kDead;
    case 1: return cont ? 0 : kDead;
    case 2: return cont ? 1 : kDead;
    case 3: return cont ? 2 : kDead;
    case 4: return byte >= 0xA0 && byte <= 0xBF ? 1 : kDead;
    case 5: return byte >= 0x80 && byte <= 0x9F ? 1 : kDead;
    case 6: return byte >= 0x90 && byte <= 0xBF ? 2 : kDead;
    case 7: return byte >= 0x80 && byte <= 0x8F ? 2 : kDead;
    default: return kDead;
  }
}

}  // namespace utf8

}  // namespace pagoda::grammar
