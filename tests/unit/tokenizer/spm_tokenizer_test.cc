// SpmTokenizer tests: the stories260K golden ids, merge order on toy vocabularies, byte fallback and UNK,
// token_bytes rules, and randomized round trips checked against a naive O(n^2) reference encoder.
#include "tokenizer/spm_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <unordered_map>

#include "core/check.h"
#include "test_text.h"
#include "tok512_vocab.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

using testing::stories_tokenizer;

// A vocabulary built by hand: ids 0..2 are <unk>, <s>, </s>; then the given normal pieces; then, if asked,
// the 256 byte pieces.
Vocab toy_vocab(const std::vector<std::pair<std::string, float>>& pieces, bool with_bytes) {
  Vocab vocab;
  auto add = [&](std::string piece, float score, TokenType type) {
    vocab.pieces.push_back(std::move(piece));
    vocab.scores.push_back(score);
    vocab.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (const auto& [piece, score] : pieces) add(piece, score, TokenType::kNormal);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenType::kByte);
  }
  return vocab;
}

// The textbook algorithm, quadratic and obviously right: merge the best-scoring adjacent pair (leftmost on
// ties) until none is a piece. The heap-based encoder must agree with it on every input.
std::vector<TokenId> reference_encode(const Vocab& vocab, std::string_view text, bool add_bos) {
  std::unordered_map<std::string, TokenId> piece_to_id;
  TokenId byte_to_id[256];
  for (TokenId& id : byte_to_id) id = -1;
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.types[size_t(id)];
    if (type == TokenType::kNormal || type == TokenType::kUserDefined)
      piece_to_id.emplace(vocab.pieces[size_t(id)], id);
    if (type == TokenType::kByte) {
      const int byte = std::stoi(vocab.pieces[size_t(id)].substr(3, 2), nullptr, 16);
      if (byte_to_id[byte] == -1) byte_to_id[byte] = id;
    }
  }
  std::vector<TokenId> ids;
  if (add_bos) ids.push_back(vocab.bos_id);
  if (text.empty()) return ids;
  std::string normalized = vocab.add_dummy_prefix ? "\xE2\x96\x81" : "";
  for (const char c : text) normalized += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  std::vector<std::string> symbols;
  for (size_t pos = 0; pos < normalized.size();) {
    const size_t n = std::max<size_t>(1, utf8_char_length(normalized, pos));
    symbols.push_back(normalized.substr(pos, n));
    pos += n;
  }
  while (true) {
    int best_idx = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = piece_to_id.find(symbols[i] + symbols[i + 1]);
      if (it == piece_to_id.end()) continue;
      const float score = vocab.scores[size_t(it->second)];
      if (best_idx == -1 || score > best_score) {
        best_idx = int(i);
        best_score = score;
      }
    }
    if (best_idx == -1) break;
    symbols[size_t(best_idx)] += symbols[size_t(best_idx) + 1];
    symbols.erase(symbols.begin() + best_idx + 1);
  }
  for (const std::string& symbol : symbols) {
    const auto it = piece_to_id.find(symbol);
    if (it != piece_to_id.end()) {
      ids.push_back(it->second);
      continue;
    }
    bool all_known = true;
    for (const char c : symbol) all_known = all_known && byte_to_id[uint8_t(c)] != -1;
    if (!all_known) {
      ids.push_back(vocab.unk_id);
      continue;
    }
    for (const char c : symbol) ids.push_back(byte_to_id[uint8_t(c)]);
  }
  return ids;
}

TEST(SpmTokenizerTest, StoriesGoldenIds) {
  const SpmTokenizer& tok = stories_tokenizer();
  EXPECT_THAT(tok.encode("Once upon a time", true), ElementsAre(1, 403, 407, 261, 378));
  EXPECT_THAT(tok.encode("Hello, world! 123", true),
              ElementsAre(1, 346, 306, 414, 432, 263, 304, 341, 443, 410, 475, 479, 472));
  EXPECT_THAT(tok.encode("naïve café 日本", true),
              ElementsAre(1, 297, 412, 198, 178, 360, 280, 412, 431, 485, 410, 233, 154, 168, 233, 159, 175));
}

TEST(SpmTokenizerTest, StoriesGoldenIdsDecodeBack) {
  const SpmTokenizer& tok = stories_tokenizer();
  for (const char* text : {"Once upon a time", "Hello, world! 123", "naïve café 日本"}) {
    EXPECT_EQ(tok.decode(tok.encode(text, true)), text);
  }
}

TEST(SpmTokenizerTest, AddBosIsTheCallersChoice) {
  const SpmTokenizer& tok = stories_tokenizer();
  EXPECT_THAT(tok.encode("Once upon a time", false), ElementsAre(403, 407, 261, 378));
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.vocab_size(), 512);
}

TEST(SpmTokenizerTest, EmptyTextHasNoDummyPrefix) {
  const SpmTokenizer& tok = stories_tokenizer();
  EXPECT_THAT(tok.encode("", true), ElementsAre(1));
  EXPECT_THAT(tok.encode("", false), ElementsAre());
  EXPECT_EQ(tok.decode(std::vector<TokenId>{1}), "");
}

TEST(SpmTokenizerTest, SpacesBecomeMarkerPieces) {
  const SpmTokenizer& tok = stories_tokenizer();
  // " " alone: dummy prefix + the space -> two ▁ (id 410 is "▁"; there is no "▁▁").
  EXPECT_THAT(tok.encode(" ", true), ElementsAre(1, 410, 410));
  EXPECT_EQ(tok.decode(tok.encode(" ", true)), " ");
  EXPECT_THAT(tok.encode(" time", true), ElementsAre(1, 410, 378));
  EXPECT_EQ(tok.decode(tok.encode(" time", true)), " time");
  EXPECT_EQ(tok.decode(tok.encode("  two  spaces  ", true)), "  two  spaces  ");
}

TEST(SpmTokenizerTest, WithoutParseSpecialControlPiecesAreNeverSpelledFromText) {
  const SpmTokenizer& tok = stories_tokenizer();
  for (const char* text : {"<s>", "</s>", "<unk>", "<0x41>", "a<s>b"}) {
    for (const TokenId id : tok.encode(text, false, /*parse_special=*/false)) {
      EXPECT_FALSE(tok.is_control(id)) << text;
      EXPECT_NE(id, 0) << text;
    }
    EXPECT_EQ(tok.decode(tok.encode(text, true, /*parse_special=*/false)), text);
  }
  // "A" is a normal piece (447), not the byte token <0x41> (3 + 0x41).
  EXPECT_THAT(tok.encode("A", false), ElementsAre(410, 447));
}

// llama.cpp's parse_special = true: control (and unknown) pieces written in the text are those tokens, and the
// text after each gets the dummy prefix again; byte pieces are still never spelled.
TEST(SpmTokenizerTest, WithParseSpecialControlPiecesInTheTextAreTokens) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::vector<TokenId> expected = tok.encode("a", false, false);
  expected.push_back(1);
  for (const TokenId id : tok.encode("b", false, false)) expected.push_back(id);
  expected.push_back(2);
  EXPECT_EQ(tok.encode("a<s>b</s>", false, true), expected);
  EXPECT_THAT(tok.encode("<unk>", false, true), ElementsAre(0));
  EXPECT_EQ(tok.encode("<0x41>", false, true), tok.encode("<0x41>", false, false));
}

TEST(SpmTokenizerTest, ByteFallbackForCharactersWithoutPieces) {
  const SpmTokenizer& tok = stories_tokenizer();
  EXPECT_THAT(tok.encode("\n", false), ElementsAre(410, 3 + 0x0A));
  // 😀 is F0 9F 98 80.
  EXPECT_THAT(tok.encode("😀", false), ElementsAre(410, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80));
  // Invalid UTF-8 bytes are symbols of their own and fall back one by one.
  EXPECT_THAT(tok.encode(std::string("a\xFF\xC3", 3), false), ElementsAre(261, 3 + 0xFF, 3 + 0xC3));
}

TEST(SpmTokenizerTest, HighestScoreMergesFirst) {
  SpmTokenizer tok(toy_vocab({{"a", -5}, {"b", -5}, {"ab", -2}, {"ba", -1}}, false));
  auto id = [&](const std::string& piece) {
    for (TokenId i = 0; i < tok.vocab_size(); ++i) {
      if (tok.vocab().pieces[size_t(i)] == piece) return i;
    }
    return TokenId(-1);
  };
  Vocab vocab = tok.vocab();
  vocab.add_dummy_prefix = false;
  SpmTokenizer no_prefix(vocab);
  // "ba" outscores "ab", so "aba" -> a + ba.
  EXPECT_THAT(no_prefix.encode("aba", false), ElementsAre(id("a"), id("ba")));
}

TEST(SpmTokenizerTest, EqualScoresMergeLeftmostFirst) {
  Vocab vocab = toy_vocab({{"a", -5}, {"b", -5}, {"ab", -1}, {"ba", -1}}, false);
  vocab.add_dummy_prefix = false;
  SpmTokenizer tok(vocab);
  // ids: a=3 b=4 ab=5 ba=6. "aba": ab and ba tie, the left one wins.
  EXPECT_THAT(tok.encode("aba", false), ElementsAre(5, 3));
  EXPECT_THAT(tok.encode("baba", false), ElementsAre(6, 6));
  EXPECT_THAT(tok.encode("ababa", false), ElementsAre(5, 5, 3));
}

TEST(SpmTokenizerTest, MergesChainThroughIntermediatePieces) {
  const std::string marker = "\xE2\x96\x81";
  Vocab vocab =
      toy_vocab({{marker, -9}, {"a", -9}, {"b", -9}, {"c", -9}, {"ab", -3}, {"abc", -2}, {marker + "abc", -1}}, true);
  SpmTokenizer tok(vocab);
  // ▁=3 a=4 b=5 c=6 ab=7 abc=8 ▁abc=9.
  EXPECT_THAT(tok.encode("abc", false), ElementsAre(9));
  EXPECT_THAT(tok.encode("abcab", false), ElementsAre(9, 7));
}

TEST(SpmTokenizerTest, UnknownWithoutBytePieces) {
  Vocab vocab = toy_vocab({{"\xE2\x96\x81", -1}, {"a", -1}, {"b", -1}}, false);
  SpmTokenizer tok(vocab);
  // ▁=3 a=4 b=5. One UNK per unknown character, whatever its byte length.
  EXPECT_THAT(tok.encode("a?b", false), ElementsAre(3, 4, 0, 5));
  EXPECT_THAT(tok.encode("a日b", false), ElementsAre(3, 4, 0, 5));
  EXPECT_EQ(tok.decode(tok.encode("a日b", true)), "a \xE2\x81\x87 b");
}

TEST(SpmTokenizerTest, TokenBytesRules) {
  const SpmTokenizer& tok = stories_tokenizer();
  EXPECT_EQ(tok.token_bytes(0, -1), " \xE2\x81\x87 ");  // <unk>: SentencePiece's " ⁇ "
  EXPECT_EQ(tok.token_bytes(1, -1), "");                // <s>
  EXPECT_EQ(tok.token_bytes(2, 5), "");                 // </s>
  EXPECT_EQ(tok.token_bytes(3 + 0x41, -1), "A");
  EXPECT_EQ(tok.token_bytes(3 + 0xE6, -1), "\xE6");
  EXPECT_EQ(tok.token_bytes(403, -1), " Once");
  EXPECT_EQ(tok.token_bytes(403, 1), "Once");     // after BOS the dummy-prefix space goes
  EXPECT_EQ(tok.token_bytes(403, 407), " Once");  // elsewhere it stays
  EXPECT_EQ(tok.token_bytes(410, 1), "");
  EXPECT_EQ(tok.token_bytes(3 + 0x20, 1), " ");  // a byte-token space is the text's own
  EXPECT_TRUE(tok.is_control(1));
  EXPECT_TRUE(tok.is_control(2));
  EXPECT_FALSE(tok.is_control(0));
  EXPECT_FALSE(tok.is_control(403));
}

TEST(SpmTokenizerTest, DecodeStripsAfterEveryBosButNotAtTheStart) {
  const SpmTokenizer& tok = stories_tokenizer();
  // Without a BOS in front, the dummy-prefix space is kept (llama2.c's rule): decode(encode(s, false)) is " " + s.
  EXPECT_EQ(tok.decode(tok.encode("Once upon", false)), " Once upon");
  std::vector<TokenId> two = tok.encode("Once", true);
  const std::vector<TokenId> second = tok.encode("upon", true);
  two.push_back(2);
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(tok.decode(two), "Onceupon");
}

TEST(SpmTokenizerTest, NoDummyPrefixMeansNoStripping) {
  Result<Vocab> vocab = testing::read_tok512_vocab(testing::tok512_path());
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  vocab->add_dummy_prefix = false;
  SpmTokenizer tok(std::move(vocab).value());
  EXPECT_THAT(tok.encode("Once", true), ElementsAre(1, 441, 416, 331));  // O n ce: no "▁Once" without a space
  EXPECT_EQ(tok.decode(tok.encode("Once", true)), "Once");
  EXPECT_EQ(tok.decode(tok.encode(" Once", true)), " Once");
  EXPECT_EQ(tok.decode(tok.encode(" Once", false)), " Once");
}

TEST(SpmTokenizerTest, MarkerInTextDecodesAsSpace) {
  const SpmTokenizer& tok = stories_tokenizer();
  // U+2581 in the input is indistinguishable from an encoded space (as in SentencePiece).
  EXPECT_EQ(tok.encode("a\xE2\x96\x81time", true), tok.encode("a time", true));
  EXPECT_EQ(tok.decode(tok.encode("a\xE2\x96\x81time", true)), "a time");
}

TEST(SpmTokenizerTest, RandomUtf8RoundTripsAndMatchesReference) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 4000; ++iter) {
    const std::string text = testing::random_utf8_text(rng, 40);
    const std::vector<TokenId> ids = tok.encode(text, true);
    ASSERT_EQ(tok.decode(ids), testing::markers_to_spaces(text)) << "iteration " << iter;
    ASSERT_THAT(ids, ElementsAreArray(reference_encode(tok.vocab(), text, true))) << "iteration " << iter;
    // Starting with a space is no exception.
    const std::string spaced = " " + text;
    ASSERT_EQ(tok.decode(tok.encode(spaced, true)), testing::markers_to_spaces(spaced)) << "iteration " << iter;
    // Without BOS the dummy prefix stays in the decoded text.
    if (!text.empty()) {
      std::string with_prefix(" ");
      with_prefix += testing::markers_to_spaces(text);
      ASSERT_EQ(tok.decode(tok.encode(text, false)), with_prefix) << "iteration " << iter;
    }
  }
}

TEST(SpmTokenizerTest, RandomBytesNeverCrashAndRoundTrip) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::mt19937 rng(99);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string bytes = testing::random_bytes(rng, 48);
    const std::vector<TokenId> ids = tok.encode(bytes, true);
    for (const TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size());
    ASSERT_EQ(tok.decode(ids), testing::markers_to_spaces(bytes)) << "iteration " << iter;
    ASSERT_THAT(ids, ElementsAreArray(reference_encode(tok.vocab(), bytes, true))) << "iteration " << iter;
  }
}

TEST(SpmTokenizerTest, LongTextEncodesQuickly) {
  const SpmTokenizer& tok = stories_tokenizer();
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < (1 << 19)) text += testing::random_utf8_text(rng, 64);
  // Long runs of one character are the classic quadratic trap for a merge loop.
  text += std::string(50000, 'a') + std::string(50000, ' ');
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TokenId> ids = tok.encode(text, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tok.decode(ids), testing::markers_to_spaces(text));
  EXPECT_LT(seconds, 20.0);  // generous for sanitizer builds; quadratic would take minutes
}

}  // namespace
}  // namespace pagoda
