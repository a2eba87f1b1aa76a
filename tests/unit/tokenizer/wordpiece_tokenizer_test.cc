// WordPieceTokenizer on a small hand-written BERT vocabulary: the normalizer (lowercasing, accent stripping,
// control characters), the pre-tokenizer (whitespace, punctuation, ASCII symbols, CJK ideographs), the longest
// piece first, [UNK] for a word without a spelling, [CLS]/[SEP] framing, special tokens in the text, decoding; the
// GGUF reader's keys and defaults, type-swapped GGUF keys, and random text and bytes (never a crash, always ids
// in the vocabulary). llama.cpp's own bert-bge vocabulary test is in llama_cpp_vocab_test.cc.
#include "tokenizer/wordpiece_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "support/gguf_mutations.h"
#include "test_text.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;

// ids: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], then the pieces below in order.
const std::vector<std::string> kPieces = {
    "[PAD]",   "[UNK]",  "[CLS]",  "[SEP]",    "\xE2\x96\x81hello", "\xE2\x96\x81world", "\xE2\x96\x81play",
    "ing",     "ed",     "\xE2\x96\x81,", "\xE2\x96\x81!", "\xE2\x96\x81" "cafe", "\xE2\x96\x81\xE4\xB8\xAD",
    "\xE2\x96\x81\xE6\x96\x87", "\xE2\x96\x81$", "\xE2\x96\x81" "a", "b", "\xE2\x96\x81" "ab",
};
enum : TokenId { kPad, kUnk, kCls, kSep, kHello, kWorld, kPlay, kIng, kEd, kComma, kBang, kCafe, kZhong, kWen, kDollar,
                 kA, kB, kAb };

WordPieceVocab test_vocab() {
  WordPieceVocab vocab;
  vocab.pieces = kPieces;
  vocab.types.assign(kPieces.size(), TokenType::kNormal);
  for (const TokenId id : {kPad, kUnk, kCls, kSep}) vocab.types[size_t(id)] = TokenType::kControl;
  vocab.cls_id = kCls;
  vocab.sep_id = kSep;
  vocab.unk_id = kUnk;
  vocab.pad_id = kPad;
  return vocab;
}

TEST(WordPieceTokenizerTest, LowercasesSplitsPunctuationAndMatchesLongestPieces) {
  const WordPieceTokenizer tok(test_vocab());
  EXPECT_THAT(tok.encode("Hello, WORLD!", false, false), ElementsAre(kHello, kComma, kWorld, kBang));
  EXPECT_THAT(tok.encode("playing played", false, false), ElementsAre(kPlay, kIng, kPlay, kEd));
  EXPECT_THAT(tok.encode("ab abb", false, false), ElementsAre(kAb, kAb, kB));  // longest first: "▁ab", not "▁a" "b"
}

TEST(WordPieceTokenizerTest, AWordWithoutASpellingIsOneUnknown) {
  const WordPieceTokenizer tok(test_vocab());
  // "playx": "▁play" matches but nothing continues with "x", so the pieces found so far are dropped.
  EXPECT_THAT(tok.encode("playx hello", false, false), ElementsAre(kUnk, kHello));
  EXPECT_THAT(tok.encode("zzz", false, false), ElementsAre(kUnk));
}

TEST(WordPieceTokenizerTest, StripsAccentsDropsControlCharactersAndIsolatesCjkAndAsciiSymbols) {
  const WordPieceTokenizer tok(test_vocab());
  EXPECT_THAT(tok.encode("Caf\xC3\xA9", false, false), ElementsAre(kCafe));        // é -> e
  EXPECT_THAT(tok.encode("cafe\xCC\x81", false, false), ElementsAre(kCafe));       // e + combining acute
  EXPECT_THAT(tok.encode("hel\x01lo\xE2\x80\x8B", false, false), ElementsAre(kHello));  // C0 control, U+200B (Cf)
  EXPECT_THAT(tok.encode("\xE4\xB8\xAD\xE6\x96\x87", false, false), ElementsAre(kZhong, kWen));
  EXPECT_THAT(tok.encode("$hello", false, false), ElementsAre(kDollar, kHello));
  EXPECT_THAT(tok.split_words(" a\tb\xE2\x80\x83" "c\n"), ElementsAre("a", "b", "c"));  // U+2003 is whitespace
}

TEST(WordPieceTokenizerTest, CaseAndAccentsKeptWhenTheVocabularySaysSo) {
  WordPieceVocab vocab = test_vocab();
  vocab.lowercase = false;
  vocab.strip_accents = false;
  const WordPieceTokenizer tok(std::move(vocab));
  EXPECT_THAT(tok.split_words("Caf\xC3\xA9 X"), ElementsAre("Caf\xC3\xA9", "X"));
  EXPECT_THAT(tok.encode("Hello hello", false, false), ElementsAre(kUnk, kHello));
}

TEST(WordPieceTokenizerTest, LongWordsAreUnknownPastTheCharacterLimit) {
  WordPieceVocab vocab = test_vocab();
  vocab.max_word_chars = 4;
  const WordPieceTokenizer tok(std::move(vocab));
  EXPECT_THAT(tok.encode("cafe hello", false, false), ElementsAre(kCafe, kUnk));
}

TEST(WordPieceTokenizerTest, AddBosFramesWithClsAndSepAndSpecialTokensParseOnlyWhenAsked) {
  const WordPieceTokenizer tok(test_vocab());
  EXPECT_THAT(tok.encode("hello", true, false), ElementsAre(kCls, kHello, kSep));
  EXPECT_THAT(tok.encode("", true, false), ElementsAre(kCls, kSep));
  EXPECT_THAT(tok.encode("hello[SEP]world", false, true), ElementsAre(kHello, kSep, kWorld));
  // As plain text, "[" and "]" are words of their own, and "sep" has no spelling.
  EXPECT_THAT(tok.encode("[SEP]", false, false), ElementsAre(kUnk, kUnk, kUnk));
  EXPECT_EQ(tok.bos_id(), kCls);
  EXPECT_EQ(tok.eos_id(), kSep);
  EXPECT_FALSE(tok.ends_generation(kSep));
}

TEST(WordPieceTokenizerTest, DecodesWordsWithSpacesAndContinuationsJoined) {
  const WordPieceTokenizer tok(test_vocab());
  EXPECT_EQ(tok.decode(tok.encode("Hello, playing world!", true, false)), "hello , playing world !");
  EXPECT_TRUE(tok.is_control(kCls));
  EXPECT_FALSE(tok.is_control(kHello));
}

TEST(WordPieceTokenizerTest, RandomTextAndBytesGiveIdsInTheVocabulary) {
  const WordPieceTokenizer tok(test_vocab());
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = i % 2 == 0 ? testing::random_utf8_text(rng, 40) : testing::random_bytes(rng, 48);
    for (const TokenId id : tok.encode(text, true, i % 3 == 0)) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok.vocab_size());
    }
    (void)tok.decode(tok.encode(text, false, false));
  }
}

format::GgufWriter bert_vocab_gguf() {
  format::GgufWriter w;
  w.set(format::gguf_key::kTokenizerModel, format::GgufValue::string("bert"));
  w.set(format::gguf_key::kTokens, format::GgufValue::string_array(kPieces));
  std::vector<int32_t> types(kPieces.size(), int32_t(TokenType::kNormal));
  for (const TokenId id : {kPad, kUnk, kCls, kSep}) types[size_t(id)] = int32_t(TokenType::kControl);
  w.set(format::gguf_key::kTokenType, format::GgufValue::i32_array(types));
  w.set(format::gguf_key::kUnknownId, format::GgufValue::u32(kUnk));
  w.set(format::gguf_key::kClsId, format::GgufValue::u32(kCls));
  w.set(format::gguf_key::kSeparatorId, format::GgufValue::u32(kSep));
  w.set(format::gguf_key::kPaddingId, format::GgufValue::u32(kPad));
  return w;
}

TEST(WordPieceVocabFromGgufTest, ReadsTheSpecialIdsAndNormalizerFlags) {
  format::GgufWriter w = bert_vocab_gguf();
  w.set(format::gguf_key::kNormalizerLowercase, format::GgufValue::boolean(false));
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = format::GgufFile::from_memory(bytes, "bert.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  Result<WordPieceVocab> vocab = wordpiece_vocab_from_gguf(*file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_EQ(vocab->cls_id, kCls);
  EXPECT_EQ(vocab->sep_id, kSep);
  EXPECT_EQ(vocab->unk_id, kUnk);
  EXPECT_FALSE(vocab->lowercase);
  EXPECT_FALSE(vocab->strip_accents);  // follows lowercase when its own key is absent, as in llama.cpp
  Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.error();
  EXPECT_THAT((*tok)->encode("hello world", true), ElementsAre(kCls, kHello, kWorld, kSep));
}

TEST(WordPieceVocabFromGgufTest, ASeparatorOutsideTheVocabularyIsAnErrorNamingTheKey) {
  format::GgufWriter w = bert_vocab_gguf();
  w.set(format::gguf_key::kSeparatorId, format::GgufValue::u32(9999));
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = format::GgufFile::from_memory(bytes, "bert.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(tok.error(), ::testing::HasSubstr("tokenizer.ggml.seperator_token_id"));
}

// Every tokenizer key a BERT vocabulary reads, set to every GGUF type: an error naming the file, or a tokenizer
// that encodes and decodes.
TEST(WordPieceVocabFromGgufTest, TypeSwappedKeysLoadOrFailByName) {
  const std::vector<uint8_t> base_bytes = bert_vocab_gguf().to_bytes();
  auto base = format::GgufFile::from_memory(base_bytes, "bert.gguf");
  ASSERT_TRUE(base.ok()) << base.error();
  int num_loaded = 0;
  for (const char* key : {format::gguf_key::kTokens, format::gguf_key::kTokenType, format::gguf_key::kUnknownId,
                          format::gguf_key::kClsId, format::gguf_key::kBosId, format::gguf_key::kSeparatorId,
                          format::gguf_key::kPaddingId, format::gguf_key::kNormalizerLowercase,
                          format::gguf_key::kNormalizerStripAccents}) {
    for (const format::GgufValue& value : testing_support::type_swapped_gguf_values()) {
      SCOPED_TRACE(std::string(key) + " as " + std::string(format::gguf_value_type_name(value.type)));
      const std::vector<uint8_t> bytes = testing_support::with_metadata(*base, key, value, /*keep_tensors=*/false);
      auto file = format::GgufFile::from_memory(bytes, "typed.gguf");
      ASSERT_TRUE(file.ok()) << file.error();
      Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
      if (!tok.ok()) {
        EXPECT_EQ(tok.error().rfind("typed.gguf: ", 0), 0u) << tok.error();
        continue;
      }
      ++num_loaded;
      (void)(*tok)->decode((*tok)->encode("Hello, world \xff\xfe", true));
    }
  }
  EXPECT_GT(num_loaded, 0);
}

}  // namespace
}  // namespace pagoda
