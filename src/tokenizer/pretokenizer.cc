// PreTokenizer: the regex translation (Oniguruma's \s -> \p{White_Space}), UTF-8 -> UTF-16 with a byte offset
// per code unit (so pieces are slices of the caller's text, invalid bytes included), and the Isolated split.
#include "tokenizer/pretokenizer.h"

#include <fmt/format.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <utility>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

// ICU's \s is [\t\n\f\r\p{Z}]; Oniguruma's (what HF runs) is the White_Space property, which adds \v and U+0085.
std::string translate_regex(std::string_view regex) {
  std::string out;
  for (size_t i = 0; i < regex.size(); ++i) {
    if (regex[i] == '\\' && i + 1 < regex.size()) {
      const char next = regex[i + 1];
      if (next == 's') {
        out += R"(\p{White_Space})";
      } else if (next == 'S') {
        out += R"(\P{White_Space})";
      } else {
        out += regex[i];
        out += next;
      }
      ++i;
      continue;
    }
    out += regex[i];
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

PreTokenizer::PreTokenizer(std::string regex, std::unique_ptr<icu::RegexPattern> pattern)
    : regex_(std::move(regex)), pattern_(std::move(pattern)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(std::string regex) {
  const std::string translated = translate_regex(regex);
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error{};
  std::unique_ptr<icu::RegexPattern> pattern(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(translated), 0, parse_error, status));
  if (U_FAILURE(status) || !pattern) {
    return make_error(fmt::format("the split regex '{}' does not compile: {} at offset {}", regex, u_errorName(status),
                                  parse_error.offset));
  }
  return PreTokenizer(std::move(regex), std::move(pattern));
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

  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(pattern_->matcher(utf16, status));
  size_t emitted = 0;  // bytes of `text` already in pieces
  const auto emit_until = [&](size_t end) {
    if (end > emitted) pieces.push_back(text.substr(emitted, end - emitted));
    emitted = end;
  };
  if (U_SUCCESS(status)) {
    while (matcher->find(status) && U_SUCCESS(status)) {
      const int32_t start = matcher->start(status);
      const int32_t end = matcher->end(status);
      if (U_FAILURE(status)) break;
      emit_until(byte_at[size_t(start)]);  // a gap the regex did not match is a piece of its own
      emit_until(byte_at[size_t(end)]);
    }
  }
  emit_until(text.size());
  return pieces;
}

}  // namespace pagoda
