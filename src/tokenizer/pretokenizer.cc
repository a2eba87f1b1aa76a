// PreTokenizer: the regex translation (each dialect's meaning in ICU syntax), UTF-8 -> UTF-16 with a byte offset
// per code unit (so pieces are slices of the caller's text, invalid bytes included), and the chained Isolated
// splits.
#include "tokenizer/pretokenizer.h"

#include <fmt/format.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr std::string_view kAsciiWordClass = "A-Za-z0-9_";

// ICU's \s is [\t\n\f\r\p{Z}]; Oniguruma's (what HF runs) and llama.cpp's (std::regex \s over text whose other
// Unicode spaces it rewrites to \v) are the White_Space property, which adds \v and U+0085.
std::string translate_regex(std::string_view regex, RegexDialect dialect) {
  const bool ecma = dialect == RegexDialect::kEcmaScript;
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[i + 1];
      if (next == 's') {
        out += R"(\p{White_Space})";
      } else if (next == 'S') {
        out += R"(\P{White_Space})";
      } else if (ecma && next == 'd') {
        out += in_class ? "0-9" : "[0-9]";
      } else if (ecma && next == 'w') {
        out += in_class ? std::string(kAsciiWordClass) : fmt::format("[{}]", kAsciiWordClass);
      } else if (ecma && next == 'b' && !in_class) {
        out += R"((?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_])))";
      } else if ((next == 'p' || next == 'P') && regex.substr(i + 2, 1) == "{" &&
                 regex.find('}', i + 3) != std::string_view::npos) {
        const size_t close = regex.find('}', i + 3);
        std::string_view property = regex.substr(i, close + 1 - i);
        // llama.cpp's \p{Lu} (and Ll, Lt, Lm, Lo) is any letter: it collapses every letter to one category.
        if (ecma && property.size() == 6 && property[3] == 'L') property = next == 'p' ? R"(\p{L})" : R"(\P{L})";
        out += property;
        i = close;
        continue;
      } else {
        out += c;
        out += next;
      }
      ++i;
      continue;
    }
    if (ecma && in_class) {
      if (c == ']') {
        in_class = false;
        out += c;
      } else if (c != '-' && uint8_t(c) < 0x80 && std::ispunct(uint8_t(c))) {
        out += '\\';  // ICU gives [ { } & $ : a meaning inside a set; std::regex reads them as themselves
        out += c;
      } else {
        out += c;
      }
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (regex.substr(i + 1, 1) == "^") {
        out += '^';
        ++i;
      }
      continue;
    }
    if (ecma && c == '$') {
      out += R"(\z)";  // ECMAScript's $ without multiline: the end of the input only
      continue;
    }
    out += c;
  }
  return out;
}

char32_t decode_char(std::string_view text, size_t pos, size_t len) {
  const auto b = [&](size_t k) { return char32_t(uint8_t(text[pos + k])); };
  switch (len) {
    case 1: return b(0);
    case 2: return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
    case 3: return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
    default: return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
  }
}

}  // namespace

PreTokenizer::PreTokenizer(std::vector<std::string> regexes, std::vector<std::unique_ptr<icu::RegexPattern>> patterns)
    : regexes_(std::move(regexes)), patterns_(std::move(patterns)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(std::string regex) {
  std::vector<std::string> regexes;
  regexes.push_back(std::move(regex));
  return create(std::move(regexes), RegexDialect::kOniguruma);
}

Result<PreTokenizer> PreTokenizer::create(std::vector<std::string> regexes, RegexDialect dialect) {
  std::vector<std::unique_ptr<icu::RegexPattern>> patterns;
  for (const std::string& regex : regexes) {
    const std::string translated = translate_regex(regex, dialect);
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse_error{};
    std::unique_ptr<icu::RegexPattern> pattern(
        icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(translated), 0, parse_error, status));
    if (U_FAILURE(status) || !pattern) {
      return make_error(fmt::format("the split regex '{}' does not compile: {} at offset {}", regex,
                                    u_errorName(status), parse_error.offset));
    }
    patterns.push_back(std::move(pattern));
  }
  return PreTokenizer(std::move(regexes), std::move(patterns));
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  // UTF-16 text plus, for each code unit (and one past the end), the byte offset of its character.
  icu::UnicodeString utf16;
  std::vector<size_t> byte_at;
  byte_at.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    const char32_t c = len == 0 ? U'\uFFFD' : decode_char(text, pos, len);
    const int32_t before = utf16.length();
    utf16.append(UChar32(c));
    for (int32_t u = before; u < utf16.length(); ++u) byte_at.push_back(pos);
    pos += len == 0 ? 1 : len;
  }
  byte_at.push_back(text.size());

  // The piece ends (UTF-16 offsets), ascending; each regex runs within each piece and cuts it further.
  std::vector<int32_t> ends = {utf16.length()};
  std::vector<int32_t> next_ends;
  for (const auto& pattern : patterns_) {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> matcher(pattern->matcher(utf16, status));
    if (U_FAILURE(status)) break;
    next_ends.clear();
    int32_t piece_start = 0;
    for (const int32_t piece_end : ends) {
      matcher->region(piece_start, piece_end, status);  // opaque bounds: lookarounds stop at the piece's edges
      while (U_SUCCESS(status) && matcher->find(status) && U_SUCCESS(status)) {
        const int32_t start = matcher->start(status);
        const int32_t end = matcher->end(status);
        if (U_FAILURE(status)) break;
        // A gap the regex did not match is a piece of its own; an empty match only cuts.
        if (start > piece_start && (next_ends.empty() || next_ends.back() < start)) next_ends.push_back(start);
        if (end > piece_start && (next_ends.empty() || next_ends.back() < end)) next_ends.push_back(end);
      }
      if (next_ends.empty() || next_ends.back() < piece_end) next_ends.push_back(piece_end);
      status = U_ZERO_ERROR;
      piece_start = piece_end;
    }
    std::swap(ends, next_ends);
  }
  size_t emitted = 0;
  for (const int32_t end : ends) {
    const size_t byte_end = byte_at[size_t(end)];
    if (byte_end > emitted) pieces.push_back(text.substr(emitted, byte_end - emitted));
    emitted = byte_end;
  }
  return pieces;
}

}  // namespace pagoda
