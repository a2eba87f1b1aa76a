// CodePointSet (code_point_set.h): range arithmetic and the UTF-8 split of a range into byte-range sequences.
#include "grammar/code_point_set.h"

#include <algorithm>

namespace pagoda::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;

int32_t utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t* out) {
  const int32_t n = utf8_length(cp);
  if (n == 1) {
    out[0] = uint8_t(cp);
  } else if (n == 2) {
    out[0] = uint8_t(0xC0 | (cp >> 6));
    out[1] = uint8_t(0x80 | (cp & 0x3F));
  } else if (n == 3) {
    out[0] = uint8_t(0xE0 | (cp >> 12));
    out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[2] = uint8_t(0x80 | (cp & 0x3F));
  } else {
    out[0] = uint8_t(0xF0 | (cp >> 18));
    out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
    out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[3] = uint8_t(0x80 | (cp & 0x3F));
  }
}

// Splits [lo, hi] (no surrogates inside) until each piece's encodings are a product of byte ranges: same
// length, and for each continuation position either the whole 0x80-0xBF range or a single prefix above it.
void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  for (const uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      split(lo, boundary, out);
      split(boundary + 1, hi, out);
      return;
    }
  }
  const int32_t n = utf8_length(lo);
  for (int32_t i = 1; i < n; ++i) {
    const uint32_t max = (1u << (6 * i)) - 1;
    if ((lo & ~max) != (hi & ~max)) {
      if ((lo & max) != 0) {
        split(lo, lo | max, out);
        split((lo | max) + 1, hi, out);
        return;
      }
      if ((hi & max) != max) {
        split(lo, (hi & ~max) - 1, out);
        split(hi & ~max, hi, out);
        return;
      }
    }
  }
  Utf8Sequence seq;
  seq.length = n;
  encode(lo, seq.lo.data());
  encode(hi, seq.hi.data());
  out.push_back(seq);
}

}  // namespace

CodePointSet CodePointSet::range(uint32_t lo, uint32_t hi) {
  CodePointSet set;
  set.add(lo, hi);
  return set;
}

CodePointSet CodePointSet::all() { return range(0, kMaxCodePoint); }

void CodePointSet::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  // Surrogates are not scalar values: UTF-8 cannot encode them.
  if (lo < kSurrogateLo && hi > kSurrogateHi) {
    ranges_.push_back({lo, kSurrogateLo - 1});
    ranges_.push_back({kSurrogateHi + 1, hi});
  } else if (lo >= kSurrogateLo && hi <= kSurrogateHi) {
    return;
  } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
    ranges_.push_back({kSurrogateHi + 1, hi});
  } else if (hi >= kSurrogateLo && hi <= kSurrogateHi) {
    ranges_.push_back({lo, kSurrogateLo - 1});
  } else {
    ranges_.push_back({lo, hi});
  }
  normalize();
}

void CodePointSet::add(const CodePointSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CodePointSet::remove(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  std::vector<CodePointRange> kept;
  for (const CodePointRange& r : ranges_) {
    if (r.hi < lo || r.lo > hi) {
      kept.push_back(r);
      continue;
    }
    if (r.lo < lo) kept.push_back({r.lo, lo - 1});
    if (r.hi > hi) kept.push_back({hi + 1, r.hi});
  }
  ranges_ = std::move(kept);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet out = all();
  for (const CodePointRange& r : ranges_) out.remove(r.lo, r.hi);
  return out;
}

bool CodePointSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp,
                             [](uint32_t v, const CodePointRange& r) { return v < r.lo; });
  if (it == ranges_.begin()) return false;
  --it;
  return cp <= it->hi;
}

void CodePointSet::normalize() {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges_) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

std::vector<Utf8Sequence> utf8_sequences(const CodePointSet& set) {
  std::vector<Utf8Sequence> out;
  for (const CodePointRange& r : set.ranges()) split(r.lo, r.hi, out);
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  uint8_t buf[4];
  encode(cp, buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(utf8_length(cp)));
}

bool decode_utf8(const std::string& text, size_t& pos, uint32_t& cp) {
  if (pos >= text.size()) return false;
  const uint8_t b0 = uint8_t(text[pos]);
  int32_t n;
  uint32_t min;
  if (b0 < 0x80) {
    cp = b0;
    pos += 1;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return false;
  }
  if (pos + size_t(n) > text.size()) return false;
  for (int32_t i = 1; i < n; ++i) {
    const uint8_t b = uint8_t(text[pos + size_t(i)]);
    if ((b & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > kMaxCodePoint || (cp >= kSurrogateLo && cp <= kSurrogateHi)) return false;
  pos += size_t(n);
  return true;
}

}  // namespace pagoda::grammar
