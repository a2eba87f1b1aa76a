// CodePointSet: a set of Unicode scalar values (code points 0..0x10FFFF without the surrogates D800-DFFF) as
// sorted, disjoint, non-adjacent ranges, and its lowering to UTF-8 byte-range sequences. The character classes of
// GBNF, regexes and JSON strings are sets of code points; the grammar matches bytes, so each class becomes the
// alternation of the byte sequences utf8_sequences returns. Owns no grammar state.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CodePointRange {
  uint32_t lo;  // inclusive
  uint32_t hi;  // inclusive
  bool operator==(const CodePointRange&) const = default;
};

class CodePointSet {
 public:
  CodePointSet() = default;
  static CodePointSet single(uint32_t cp) { return range(cp, cp); }
  static CodePointSet range(uint32_t lo, uint32_t hi);
  static CodePointSet all();  // every scalar value

  // Adds [lo, hi] (clamped to 0..0x10FFFF; surrogates are dropped). lo > hi adds nothing.
  void add(uint32_t lo, uint32_t hi);
  void add(const CodePointSet& other);
  void remove(uint32_t lo, uint32_t hi);
  CodePointSet complement() const;  // within the scalar values
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<CodePointRange>& ranges() const { return ranges_; }
  bool operator==(const CodePointSet&) const = default;

 private:
  void normalize();
  std::vector<CodePointRange> ranges_;
};

// One UTF-8 byte sequence pattern: byte i of the encoding lies in [lo[i], hi[i]]. Every combination is a valid
// encoding of a code point of the range it came from.
struct Utf8Sequence {
  int32_t length = 0;  // 1..4
  std::array<uint8_t, 4> lo{};
  std::array<uint8_t, 4> hi{};
};

// The byte-sequence patterns whose union is exactly the UTF-8 encodings of the set's code points.
std::vector<Utf8Sequence> utf8_sequences(const CodePointSet& set);

// Appends the UTF-8 encoding of `cp` (a scalar value) to `out`.
void append_utf8(uint32_t cp, std::string& out);
// Decodes one code point from text[pos...]; advances pos. Returns false for an invalid or truncated sequence
// (overlong forms, surrogates and values above 0x10FFFF are invalid).
bool decode_utf8(const std::string& text, size_t& pos, uint32_t& cp);

}  // namespace pagoda::grammar
