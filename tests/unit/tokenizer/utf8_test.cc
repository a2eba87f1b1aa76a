// utf8_char_length / utf8_incomplete_tail tests: strict UTF-8 boundaries (overlongs, surrogates, > U+10FFFF).
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace pagoda {
namespace {

size_t char_length(const std::string& bytes) { return utf8_char_length(bytes, 0); }

TEST(Utf8Test, CharLengthOfValidCharacters) {
  EXPECT_EQ(char_length("a"), 1u);
  EXPECT_EQ(char_length(std::string(1, '\0')), 1u);
  EXPECT_EQ(char_length("\xC2\x80"), 2u);
  EXPECT_EQ(char_length("\xDF\xBF"), 2u);
  EXPECT_EQ(char_length("\xE0\xA0\x80"), 3u);
  EXPECT_EQ(char_length("\xE6\x97\xA5"), 3u);
  EXPECT_EQ(char_length("\xEF\xBF\xBF"), 3u);
  EXPECT_EQ(char_length("\xF0\x90\x80\x80"), 4u);
  EXPECT_EQ(char_length("\xF4\x8F\xBF\xBF"), 4u);
  EXPECT_EQ(utf8_char_length("x\xE6\x97\xA5y", 1), 3u);
}

TEST(Utf8Test, CharLengthRejectsMalformedSequences) {
  EXPECT_EQ(char_length("\x80"), 0u);              // stray continuation
  EXPECT_EQ(char_length("\xC0\x80"), 0u);          // overlong
  EXPECT_EQ(char_length("\xC1\xBF"), 0u);          // overlong
  EXPECT_EQ(char_length("\xE0\x9F\xBF"), 0u);      // overlong 3-byte
  EXPECT_EQ(char_length("\xED\xA0\x80"), 0u);      // surrogate
  EXPECT_EQ(char_length("\xF0\x8F\xBF\xBF"), 0u);  // overlong 4-byte
  EXPECT_EQ(char_length("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(char_length("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(char_length("\xFF"), 0u);
  EXPECT_EQ(char_length("\xE6\x97"), 0u);  // truncated
  EXPECT_EQ(char_length("\xE6\x97z"), 0u);
  EXPECT_EQ(char_length("\xC3z"), 0u);
}

TEST(Utf8Test, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE6"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE6\x97"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE6\x97\xA5"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xE6\x97\xA5\x97"), 0u);  // stray continuation after a full character
  EXPECT_EQ(utf8_incomplete_tail("\x80\x80\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xC0"), 0u);      // can never be valid
  EXPECT_EQ(utf8_incomplete_tail("\xED\xA0"), 0u);  // a surrogate is coming: invalid already
  EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);  // overlong already
  EXPECT_EQ(utf8_incomplete_tail("\xF4\x90"), 0u);  // past U+10FFFF already
  EXPECT_EQ(utf8_incomplete_tail("\xC3"), 1u);
}

}  // namespace
}  // namespace pagoda
