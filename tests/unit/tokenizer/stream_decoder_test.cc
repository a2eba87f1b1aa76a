// StreamDecoder tests: pushing tokens one by one gives exactly decode()'s text, no piece ever ends inside a
// character, and bytes that can never complete a character are passed through instead of held.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/check.h"
#include "test_text.h"
#include "tok512_vocab.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

using testing::stories_tokenizer;

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8_char_length(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

TEST(StreamDecoderTest, HoldsASplitCharacterUntilItsLastByte) {
  const SpmTokenizer& tok = stories_tokenizer();
  // 日 = E6 97 A5 arrives as three byte tokens.
  StreamDecoder decoder(tok, 1);
  EXPECT_EQ(decoder.push(3 + 0xE6), "");
  EXPECT_EQ(decoder.push(3 + 0x97), "");
  EXPECT_EQ(decoder.push(3 + 0xA5), "日");
  EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamDecoderTest, FirstPieceAfterBosLosesItsSpace) {
  const SpmTokenizer& tok = stories_tokenizer();
  StreamDecoder decoder(tok, tok.bos_id());
  EXPECT_EQ(decoder.push(403), "Once");
  EXPECT_EQ(decoder.push(407), " upon");
  StreamDecoder mid_text(tok, 407);  // continuing after a prompt that ended in " upon"
  EXPECT_EQ(mid_text.push(261), " a");
}

TEST(StreamDecoderTest, CompletesHeldBytesThenHoldsTheNextCharacter) {
  const SpmTokenizer& tok = stories_tokenizer();
  StreamDecoder decoder(tok, 5);
  EXPECT_EQ(decoder.push(3 + 0xE6), "");
  EXPECT_EQ(decoder.push(3 + 0x97), "");
  EXPECT_EQ(decoder.push(3 + 0xA5), "日");
  EXPECT_EQ(decoder.push(3 + 0xF0), "");  // 😀 = F0 9F 98 80
  EXPECT_EQ(decoder.push(3 + 0x9F), "");
  EXPECT_EQ(decoder.push(3 + 0x98), "");
  EXPECT_EQ(decoder.push(3 + 0x80), "😀");
}

TEST(StreamDecoderTest, PassesThroughBytesThatCanNeverComplete) {
  const SpmTokenizer& tok = stories_tokenizer();
  StreamDecoder decoder(tok, 5);
  EXPECT_EQ(decoder.push(3 + 0x80), "\x80");  // a stray continuation byte
  EXPECT_EQ(decoder.push(3 + 0xFF), "\xFF");  // never valid in UTF-8
  EXPECT_EQ(decoder.push(3 + 0xC0), "\xC0");  // overlong lead byte
  EXPECT_EQ(decoder.push(3 + 0xE6), "");      // could become a character...
  EXPECT_EQ(decoder.push(412), "\xE6\x61");   // ...until "a" shows it cannot
  EXPECT_EQ(decoder.push(3 + 0xED), "");
  EXPECT_EQ(decoder.push(3 + 0xA0), "\xED\xA0");  // ED A0 starts a surrogate: invalid, released at once
}

TEST(StreamDecoderTest, FlushReturnsAnUnfinishedTail) {
  const SpmTokenizer& tok = stories_tokenizer();
  StreamDecoder decoder(tok, 5);
  EXPECT_EQ(decoder.push(412), "a");
  EXPECT_EQ(decoder.push(3 + 0xE6), "");
  EXPECT_EQ(decoder.push(3 + 0x97), "");
  EXPECT_EQ(decoder.flush(), "\xE6\x97");
  EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamDecoderTest, RandomTextStreamsExactlyAsDecode) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::mt19937 rng(4321);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string text = testing::random_utf8_text(rng, 40);
    const std::vector<TokenId> ids = tok.encode(text, true);
    StreamDecoder decoder(tok);
    std::string streamed;
    for (const TokenId id : ids) {
      const std::string piece = decoder.push(id);
      ASSERT_TRUE(is_valid_utf8(piece)) << "iteration " << iter << ": partial character emitted";
      streamed += piece;
    }
    ASSERT_EQ(decoder.flush(), "") << "iteration " << iter;
    ASSERT_EQ(streamed, tok.decode(ids)) << "iteration " << iter;
  }
}

TEST(StreamDecoderTest, RandomBytesStreamExactlyAsDecode) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::mt19937 rng(8765);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::vector<TokenId> ids = tok.encode(testing::random_bytes(rng, 48), true);
    const std::string decoded = tok.decode(ids);
    // Where the decoded text's units start: each valid character, and each byte that is not part of one.
    std::vector<bool> is_boundary(decoded.size() + 1, false);
    for (size_t pos = 0; pos < decoded.size();) {
      is_boundary[pos] = true;
      pos += std::max<size_t>(1, utf8_char_length(decoded, pos));
    }
    is_boundary[decoded.size()] = true;
    StreamDecoder decoder(tok);
    std::string streamed;
    for (const TokenId id : ids) {
      streamed += decoder.push(id);
      // A piece never ends inside a valid character of the final text; invalid bytes may go out one by one.
      ASSERT_LE(streamed.size(), decoded.size()) << "iteration " << iter;
      ASSERT_TRUE(is_boundary[streamed.size()]) << "iteration " << iter << " at byte " << streamed.size();
    }
    streamed += decoder.flush();
    ASSERT_EQ(streamed, decoded) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace pagoda
