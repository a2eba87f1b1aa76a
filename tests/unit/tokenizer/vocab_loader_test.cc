// vocab_from_gguf / tokenizer_from_gguf tests: GGUF files built in memory (each breaking one rule, each error
// naming its key), derived token types, and the bundled stories260K.gguf against the golden ids.
#include "tokenizer/vocab_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/check.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "tok512_vocab.h"

namespace pagoda {
namespace {

using format::GgufFile;
using format::GgufValue;
using format::GgufWriter;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Vocab stories_vocab() {
  Result<Vocab> vocab = testing::read_tok512_vocab(testing::tok512_path());
  PAGODA_CHECK(vocab.ok(), "{}", vocab.error());
  return std::move(vocab).value();
}

std::vector<int32_t> type_ids(const Vocab& vocab) {
  std::vector<int32_t> ids;
  for (const TokenType type : vocab.types) ids.push_back(int32_t(type));
  return ids;
}

// The tokenizer metadata the converter writes for stories260K; tests then break one key at a time.
GgufWriter stories_writer() {
  const Vocab vocab = stories_vocab();
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("llama"));
  writer.set("tokenizer.ggml.model", GgufValue::string("llama"));
  writer.set("tokenizer.ggml.tokens", GgufValue::string_array(vocab.pieces));
  writer.set("tokenizer.ggml.scores", GgufValue::f32_array(vocab.scores));
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(type_ids(vocab)));
  writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  writer.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
  return writer;
}

// Owns the bytes a GgufFile parsed from memory points into.
struct MemoryGguf {
  std::vector<uint8_t> bytes;
  std::optional<GgufFile> file;
};

std::unique_ptr<MemoryGguf> parse(const GgufWriter& writer) {
  auto gguf = std::make_unique<MemoryGguf>();
  gguf->bytes = writer.to_bytes();
  Result<GgufFile> file = GgufFile::from_memory(gguf->bytes, "test.gguf");
  PAGODA_CHECK(file.ok(), "{}", file.error());
  gguf->file.emplace(std::move(file).value());
  return gguf;
}

std::string vocab_error(const GgufWriter& writer) {
  const auto gguf = parse(writer);
  Result<Vocab> vocab = vocab_from_gguf(*gguf->file);
  return vocab.ok() ? "(loaded fine)" : vocab.error();
}

std::string tokenizer_error(const GgufWriter& writer) {
  const auto gguf = parse(writer);
  Result<std::unique_ptr<Tokenizer>> tokenizer = tokenizer_from_gguf(*gguf->file);
  return tokenizer.ok() ? "(loaded fine)" : tokenizer.error();
}

void expect_golden_ids(const Tokenizer& tok) {
  EXPECT_THAT(tok.encode("Once upon a time", true), ElementsAre(1, 403, 407, 261, 378));
  EXPECT_THAT(tok.encode("Hello, world! 123", true),
              ElementsAre(1, 346, 306, 414, 432, 263, 304, 341, 443, 410, 475, 479, 472));
  EXPECT_THAT(tok.encode("naïve café 日本", true),
              ElementsAre(1, 297, 412, 198, 178, 360, 280, 412, 431, 485, 410, 233, 154, 168, 233, 159, 175));
  EXPECT_EQ(tok.decode(tok.encode("naïve café 日本", true)), "naïve café 日本");
}

TEST(VocabLoaderTest, LoadsTheStoriesVocabulary) {
  const auto gguf = parse(stories_writer());
  Result<Vocab> vocab = vocab_from_gguf(*gguf->file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  const Vocab expected = stories_vocab();
  EXPECT_EQ(vocab->pieces, expected.pieces);
  EXPECT_EQ(vocab->scores, expected.scores);
  EXPECT_EQ(vocab->types, expected.types);
  EXPECT_EQ(vocab->bos_id, 1);
  EXPECT_EQ(vocab->eos_id, 2);
  EXPECT_EQ(vocab->unk_id, 0);
  EXPECT_TRUE(vocab->add_bos);           // default when the key is absent
  EXPECT_TRUE(vocab->add_dummy_prefix);  // default when the key is absent

  Result<std::unique_ptr<Tokenizer>> tokenizer = tokenizer_from_gguf(*gguf->file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  expect_golden_ids(**tokenizer);
}

TEST(VocabLoaderTest, ReadsFlagsAndIds) {
  GgufWriter writer = stories_writer();
  writer.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  writer.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  writer.set("tokenizer.ggml.eos_token_id", GgufValue::i32(5));
  const auto gguf = parse(writer);
  Result<Vocab> vocab = vocab_from_gguf(*gguf->file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_FALSE(vocab->add_bos);
  EXPECT_FALSE(vocab->add_dummy_prefix);
  EXPECT_EQ(vocab->eos_id, 5);
}

TEST(VocabLoaderTest, SpecialIdsDefaultToSentencePieceLayout) {
  GgufWriter writer;
  const Vocab expected = stories_vocab();
  writer.set("tokenizer.ggml.model", GgufValue::string("llama"));
  writer.set("tokenizer.ggml.tokens", GgufValue::string_array(expected.pieces));
  writer.set("tokenizer.ggml.scores", GgufValue::f32_array(expected.scores));
  const auto gguf = parse(writer);
  Result<Vocab> vocab = vocab_from_gguf(*gguf->file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_EQ(vocab->unk_id, 0);
  EXPECT_EQ(vocab->bos_id, 1);
  EXPECT_EQ(vocab->eos_id, 2);
  // No token_type: bytes recognised by spelling, the special ids by role, the rest normal.
  EXPECT_EQ(vocab->types, expected.types);
  Result<std::unique_ptr<Tokenizer>> tokenizer = tokenizer_from_gguf(*gguf->file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  expect_golden_ids(**tokenizer);
}

TEST(VocabLoaderTest, MissingTokensIsAnError) {
  GgufWriter writer;
  writer.set("tokenizer.ggml.model", GgufValue::string("llama"));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.tokens is missing"));
  writer.set("tokenizer.ggml.tokens", GgufValue::string_array({}));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.tokens has no entries"));
}

TEST(VocabLoaderTest, ScoresMustMatchTokens) {
  GgufWriter writer = stories_writer();
  std::vector<float> scores = stories_vocab().scores;
  scores.resize(500);
  writer.set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.scores has 500 entries, expected 512 (one per token)"));
}

TEST(VocabLoaderTest, ScoresAreRequiredAndFinite) {
  GgufWriter missing;
  missing.set("tokenizer.ggml.tokens", GgufValue::string_array(stories_vocab().pieces));
  EXPECT_THAT(vocab_error(missing), HasSubstr("tokenizer.ggml.scores is missing"));

  GgufWriter writer = stories_writer();
  std::vector<float> scores = stories_vocab().scores;
  scores[300] = std::numeric_limits<float>::quiet_NaN();
  writer.set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.scores[300]"));
}

TEST(VocabLoaderTest, TokenTypeMustMatchTokens) {
  GgufWriter writer = stories_writer();
  std::vector<int32_t> types = type_ids(stories_vocab());
  types.push_back(1);
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  EXPECT_THAT(vocab_error(writer),
              HasSubstr("tokenizer.ggml.token_type has 513 entries, expected 512 (one per token)"));
}

TEST(VocabLoaderTest, TokenTypeValuesAreChecked) {
  GgufWriter writer = stories_writer();
  std::vector<int32_t> types = type_ids(stories_vocab());
  types[400] = 9;
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.token_type[400] is 9"));

  types[400] = int32_t(TokenType::kByte);  // " very" is not spelled <0xNN>
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.token_type[400] says byte"));
}

TEST(VocabLoaderTest, SpecialIdsMustBeInRange) {
  for (const char* key :
       {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"}) {
    GgufWriter writer = stories_writer();
    writer.set(key, GgufValue::u32(512));
    EXPECT_THAT(vocab_error(writer), HasSubstr(std::string(key) + " is 512, outside the vocabulary of 512 tokens"));
  }
}

TEST(VocabLoaderTest, UnsetUnknownNeedsEveryBytePiece) {
  GgufWriter writer = stories_writer();
  writer.set("tokenizer.ggml.unknown_token_id", GgufValue::i32(-1));
  const auto gguf = parse(writer);
  Result<Vocab> vocab = vocab_from_gguf(*gguf->file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_EQ(vocab->unk_id, -1);

  std::vector<int32_t> types = type_ids(stories_vocab());
  types[3 + 0x41] = int32_t(TokenType::kUnused);
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.unknown_token_id is -1"));
}

TEST(VocabLoaderTest, WrongValueTypeNamesTheKey) {
  GgufWriter writer = stories_writer();
  writer.set("tokenizer.ggml.scores", GgufValue::string("not scores"));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.scores"));
  writer = stories_writer();
  writer.set("tokenizer.ggml.add_bos_token", GgufValue::u32(1));
  EXPECT_THAT(vocab_error(writer), HasSubstr("tokenizer.ggml.add_bos_token"));
}

TEST(VocabLoaderTest, TokenizerNeedsAModelItKnows) {
  GgufWriter writer = stories_writer();
  writer.set("tokenizer.ggml.model", GgufValue::string("t5"));  // llama.cpp's Unigram: not supported
  EXPECT_THAT(tokenizer_error(writer), HasSubstr("tokenizer.ggml.model is 't5'"));
  // gpt2 (byte-level BPE) is supported, but needs its merges.
  writer.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  EXPECT_THAT(tokenizer_error(writer), HasSubstr("tokenizer.ggml.merges is missing"));

  GgufWriter no_model;
  const Vocab vocab = stories_vocab();
  no_model.set("tokenizer.ggml.tokens", GgufValue::string_array(vocab.pieces));
  no_model.set("tokenizer.ggml.scores", GgufValue::f32_array(vocab.scores));
  EXPECT_THAT(tokenizer_error(no_model), HasSubstr("tokenizer.ggml.model is missing"));
}

TEST(VocabLoaderTest, BundledModelGivesTheGoldenIds) {
  const std::string path = PAGODA_TEST_BUNDLED_MODEL;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " does not exist yet (the converter writes it)";
  Result<GgufFile> file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  Result<std::unique_ptr<Tokenizer>> tokenizer = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  expect_golden_ids(**tokenizer);
  EXPECT_EQ((*tokenizer)->vocab_size(), 512);
  EXPECT_EQ((*tokenizer)->bos_id(), 1);
  EXPECT_EQ((*tokenizer)->eos_id(), 2);

  // The GGUF vocabulary is the tok512.bin one, piece for piece (control pieces aside: llama2.c decorates them).
  Result<Vocab> vocab = vocab_from_gguf(*file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  const Vocab expected = stories_vocab();
  ASSERT_EQ(vocab->size(), expected.size());
  EXPECT_EQ(vocab->types, expected.types);
  EXPECT_EQ(vocab->scores, expected.scores);
  for (TokenId id = 3; id < expected.size(); ++id) EXPECT_EQ(vocab->pieces[size_t(id)], expected.pieces[size_t(id)]);
}

}  // namespace
}  // namespace pagoda
