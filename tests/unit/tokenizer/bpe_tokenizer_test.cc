// Byte-level BPE tests: the GPT-2 byte mapping, merges by rank on a tiny hand-written vocabulary, each split
// regex on known splits, added-token matching, the tokenizer.json and GGUF "gpt2" loaders' errors, and fuzz of
// truncated/mutated tokenizer.json text and random bytes to encode (real-vocabulary parity is the e2e test).
#include <algorithm>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_vocab_gguf_writer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> split(std::string_view regex, std::string_view text) {
  Result<PreTokenizer> pre = PreTokenizer::create(std::string(regex));
  EXPECT_TRUE(pre.ok());
  std::vector<std::string> out;
  for (std::string_view piece : pre->split(text)) out.emplace_back(piece);
  return out;
}

// Ids 0..255 are the 256 byte characters in byte order; merges build "he", "ll", "hell", "hello", "Ġw".
nlohmann::json tiny_json() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, char(b)))] = b;
  const std::vector<std::string> merged = {"he", "ll", "hell", "hello", "Ġw"};
  for (size_t i = 0; i < merged.size(); ++i) vocab[merged[i]] = 256 + int(i);
  return {{"version", "1.0"},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"added_tokens",
           {{{"id", 261}, {"content", "<|end|>"}, {"special", true}},
            {{"id", 262}, {"content", "<|end|>x"}, {"special", false}},
            {{"id", 263}, {"content", "<pad>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", "he ll", {"hell", "o"}, "Ġ w"}}}}};
}

std::unique_ptr<BpeTokenizer> tiny_tokenizer(const nlohmann::json& json = tiny_json()) {
  Result<BpeVocab> vocab = bpe_vocab_from_hf_json(json.dump(), "tiny.json");
  EXPECT_TRUE(vocab.ok()) << (vocab.ok() ? "" : vocab.error());
  Result<std::unique_ptr<BpeTokenizer>> tok = BpeTokenizer::create(std::move(vocab).value(), "tiny.json");
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error());
  return std::move(tok).value();
}

std::string load_error(const nlohmann::json& json) {
  Result<BpeVocab> vocab = bpe_vocab_from_hf_json(json.dump(), "bad.json");
  if (!vocab.ok()) return vocab.error();
  Result<std::unique_ptr<BpeTokenizer>> tok = BpeTokenizer::create(std::move(vocab).value(), "bad.json");
  return tok.ok() ? "" : tok.error();
}

// A byte-level vocabulary may lack byte tokens (llama.cpp loads it): the bytes no UTF-8 has (0xC0, 0xC1,
// 0xF5..0xFF) read as U+FFFD, as llama.cpp reads invalid UTF-8; any other missing byte is dropped, as llama.cpp
// drops it.
TEST(BpeTokenizerTest, AVocabularyMissingByteTokensLoads) {
  nlohmann::json json = tiny_json();
  for (const int b : {0xC0, 0xC1, 0xF5, 0xFF, int('A')})
    json["model"]["vocab"].erase(byte_level_encode(std::string(1, char(b))));
  EXPECT_EQ(load_error(json), "");
  const std::unique_ptr<BpeTokenizer> tok = tiny_tokenizer(json);
  EXPECT_THAT(tok->encode("\xFF", false), ElementsAre(0xEF, 0xBF, 0xBD));
  EXPECT_THAT(tok->encode("xAy", false), ElementsAre('x', 'y'));
  EXPECT_THAT(tok->encode("\xC3\xA9", false), ElementsAre(0xC3, 0xA9));  // é keeps its bytes
}

TEST(ByteLevelTest, EveryByteRoundTripsThroughOnePrintableCharacter) {
  EXPECT_EQ(byte_level_char(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(byte_level_char('\n'), U'\u010A');  // "Ċ"
  EXPECT_EQ(byte_level_char('A'), U'A');
  EXPECT_EQ(byte_level_char(0xAD), U'\u0143');  // the last of the 68 remapped bytes
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all += char(b);
    EXPECT_EQ(byte_level_byte(byte_level_char(uint8_t(b))), uint8_t(b));
  }
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  EXPECT_EQ(byte_level_encode(" hi\n"), "ĠhiĊ");
  EXPECT_EQ(byte_level_decode("漢"), "漢");  // outside the mapping: kept as is
}

TEST(PreTokenizerTest, Gpt2SplitsContractionsWordsNumbersAndSpaces) {
  EXPECT_THAT(split(kGpt2SplitRegex, "Hello world's  123"), ElementsAre("Hello", " world", "'s", " ", " 123"));
  EXPECT_THAT(split(kGpt2SplitRegex, "I'M x"), ElementsAre("I", "'", "M", " x"));  // GPT-2 is case-sensitive
}

TEST(PreTokenizerTest, Llama3GroupsDigitsByThreeAndIgnoresContractionCase) {
  EXPECT_THAT(split(kLlama3SplitRegex, "12345 abc"), ElementsAre("123", "45", " abc"));
  EXPECT_THAT(split(kLlama3SplitRegex, "HELLO'S"), ElementsAre("HELLO", "'S"));
  EXPECT_THAT(split(kLlama3SplitRegex, "a\n\n b"), ElementsAre("a", "\n\n", " b"));
  // \s+(?!\S) backtracks to leave the tab, which then leads the word: HF gives the same split.
  EXPECT_THAT(split(kLlama3SplitRegex, "x  \ty"), ElementsAre("x", "  ", "\ty"));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_THAT(split(kQwen2SplitRegex, "12345"), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(split(kQwen2SplitRegex, "你好 世界!"), ElementsAre("你好", " 世界", "!"));
}

TEST(PreTokenizerTest, InvalidUtf8StaysInThePieces) {
  const std::string text = "ab\xff\xfe cd\xe2\x82";
  std::string joined;
  for (const std::string& piece : split(kLlama3SplitRegex, text)) joined += piece;
  EXPECT_EQ(joined, text);
}

TEST(PreTokenizerTest, ABadRegexIsAnError) {
  Result<PreTokenizer> pre = PreTokenizer::create("(unclosed");
  ASSERT_FALSE(pre.ok());
  EXPECT_THAT(pre.error(), HasSubstr("does not compile"));
}

TEST(BpeTokenizerTest, MergesApplyByRank) {
  const auto tok = tiny_tokenizer();
  EXPECT_THAT(tok->encode("hello", false), ElementsAre(259));  // h e -> he, l l, he ll, hell o
  EXPECT_THAT(tok->encode("hello world", false), ElementsAre(259, 260, 'o', 'r', 'l', 'd'));  // Ġ w
  EXPECT_THAT(tok->encode("helo", false), ElementsAre(256, 'l', 'o'));
  EXPECT_EQ(tok->decode(tok->encode("hello world", false)), "hello world");
}

TEST(BpeTokenizerTest, AddedTokensMatchLongestFirstAndStripWhitespace) {
  const auto tok = tiny_tokenizer();
  EXPECT_THAT(tok->encode("a<|end|>b", false), ElementsAre('a', 261, 'b'));
  EXPECT_THAT(tok->encode("a<|end|>x", false), ElementsAre('a', 262));         // the longer non-special token wins
  EXPECT_THAT(tok->encode("a  <pad>  b", false), ElementsAre('a', 263, 'b'));  // lstrip + rstrip
  EXPECT_THAT(tok->encode("<|end", false), ElementsAre('<', '|', 'e', 'n', 'd'));
  EXPECT_TRUE(tok->is_control(261));
  EXPECT_FALSE(tok->is_control(262));
  EXPECT_EQ(tok->token_bytes(261, -1), "");          // special: no text
  EXPECT_EQ(tok->token_bytes(262, -1), "<|end|>x");  // added, not special: its content
  EXPECT_EQ(tok->vocab_size(), 264);
}

// gpt-oss's harmony vocabulary: <|end|> closes a message, not the reply (<|return|> and <|call|> do), and the
// markers decode to their text so that the reply's channels can be read; other special tokens stay silent.
TEST(BpeTokenizerTest, AHarmonyVocabularyEndsAtReturnAndCallAndShowsItsMarkers) {
  nlohmann::json json = tiny_json();
  const std::vector<std::string> harmony = {"<|start|>", "<|channel|>", "<|message|>", "<|return|>", "<|call|>",
                                            "<|constrain|>"};
  for (size_t i = 0; i < harmony.size(); ++i)
    json["added_tokens"].push_back({{"id", 264 + int(i)}, {"content", harmony[i]}, {"special", true}});
  const auto tok = tiny_tokenizer(json);
  const std::vector<TokenId> ids =
      tok->encode("<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|call|>", false);
  EXPECT_EQ(tok->decode(ids), "<|channel|>analysis<|message|>hm<|end|><|start|>assistant");
  EXPECT_FALSE(tok->ends_generation(261));  // <|end|>
  EXPECT_TRUE(tok->ends_generation(267));   // <|return|>
  EXPECT_TRUE(tok->ends_generation(268));   // <|call|>
  EXPECT_FALSE(tok->is_control(265));
  EXPECT_TRUE(tok->is_control(267));
  EXPECT_TRUE(tok->is_control(263));
  EXPECT_EQ(tok->token_bytes(263, -1), "");  // <pad>
  // Without the harmony set, <|end|> ends generation and has no text, as before.
  const auto plain = tiny_tokenizer();
  EXPECT_TRUE(plain->ends_generation(261));
  EXPECT_EQ(plain->token_bytes(261, -1), "");
}

// llama.cpp's parse_special = false: a special token written in the text is plain text; an added token that is
// not special is still matched.
TEST(BpeTokenizerTest, WithoutParseSpecialSpecialTokensInTheTextArePlainText) {
  const auto tok = tiny_tokenizer();
  const std::vector<TokenId> plain = tok->encode("a<|end|>b", false, /*parse_special=*/false);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), 261), plain.end());
  EXPECT_EQ(tok->decode(plain), "a<|end|>b");
  EXPECT_THAT(tok->encode("a<|end|>x", false, false), ElementsAre('a', 262));
  EXPECT_THAT(tok->encode("a<|end|>b", false, true), ElementsAre('a', 261, 'b'));
}

TEST(BpeTokenizerTest, IgnoreMergesTakesAWholeTokenAsIs) {
  nlohmann::json json = tiny_json();
  json["model"]["vocab"]["lo"] = 264;  // reachable only as a whole piece: no merge builds it
  json["model"]["ignore_merges"] = true;
  EXPECT_THAT(tiny_tokenizer(json)->encode("lo", false), ElementsAre(264));
  json["model"]["ignore_merges"] = false;
  EXPECT_THAT(tiny_tokenizer(json)->encode("lo", false), ElementsAre('l', 'o'));
}

TEST(BpeTokenizerTest, TemplateProcessingAddsBos) {
  nlohmann::json json = tiny_json();
  json["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  const auto tok = tiny_tokenizer(json);
  EXPECT_EQ(tok->bos_id(), 261);
  EXPECT_THAT(tok->encode("he", true), ElementsAre(261, 256));
  EXPECT_THAT(tok->encode("he", false), ElementsAre(256));
}

// Qwen3-Embedding's post-processor appends <|endoftext|>: read as llama.cpp's converter reads it, an appended EOS
// (tokenizer.ggml.add_eos_token, and the EOS the configs named still ends generation); encoding does not append it.
TEST(BpeTokenizerTest, TemplateProcessingsTrailingTokenIsAnAppendedEos) {
  nlohmann::json json = tiny_json();
  json["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}}}}};
  Result<BpeVocab> vocab = bpe_vocab_from_hf_json(json.dump(), "t.json", R"({"eos_token": "<pad>"})", "");
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_TRUE(vocab->add_eos);
  EXPECT_EQ(vocab->eos_id, 261);
  EXPECT_THAT(vocab->stop_ids, ElementsAre(263));  // the EOS tokenizer_config.json named
  EXPECT_FALSE(vocab->add_bos);
  format::GgufWriter w;
  ASSERT_TRUE(add_bpe_vocabulary(*vocab, 300, w, "t.json").ok());
  const std::vector<uint8_t> bytes = w.to_bytes();
  Result<format::GgufFile> file = format::GgufFile::from_memory(bytes, "e.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_bool("tokenizer.ggml.add_eos_token").value(), std::optional<bool>(true));
  EXPECT_TRUE(bpe_vocab_from_gguf(*file).value().add_eos);
  const auto tok = tiny_tokenizer(json);
  EXPECT_THAT(tok->encode("he", true), ElementsAre(256));
  // An unknown trailing token is an error naming it.
  json["post_processor"]["single"][1]["SpecialToken"]["id"] = "<|nope|>";
  Result<BpeVocab> bad = bpe_vocab_from_hf_json(json.dump(), "t.json", "", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("post_processor.single[1].SpecialToken.id"));
}

TEST(BpeTokenizerTest, NfcComposesBeforeSplitting) {
  nlohmann::json json = tiny_json();
  json["normalizer"] = {{"type", "NFC"}};
  const auto tok = tiny_tokenizer(json);
  EXPECT_EQ(tok->decode(tok->encode("e\u0301", false)), "\u00e9");
}

TEST(BpeTokenizerTest, StreamDecoderHoldsASplitCharacterBack) {
  const auto tok = tiny_tokenizer();
  const std::vector<TokenId> ids = tok->encode("漢", false);  // three byte tokens
  ASSERT_EQ(ids.size(), 3u);
  StreamDecoder decoder(*tok);
  EXPECT_EQ(decoder.push(ids[0]), "");
  EXPECT_EQ(decoder.push(ids[1]), "");
  EXPECT_EQ(decoder.push(ids[2]), "漢");
}

TEST(HfLoaderTest, ErrorsNameTheFileAndField) {
  nlohmann::json json = tiny_json();
  json["model"]["type"] = "WordPiece";
  EXPECT_THAT(load_error(json), HasSubstr("bad.json: model.type is 'WordPiece'"));
  json["model"]["type"] = "Unigram";
  EXPECT_THAT(load_error(json), HasSubstr("model.type is 'Unigram'"));
  json = tiny_json();
  json["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_THAT(load_error(json), HasSubstr("pre_tokenizer.type is 'Metaspace'"));
  json = tiny_json();
  json["model"]["merges"][0] = "h";
  EXPECT_THAT(load_error(json), HasSubstr("model.merges[0]"));
  json = tiny_json();
  json["model"]["merges"].push_back("q z");
  EXPECT_THAT(load_error(json), HasSubstr("merges[5] ('q z') uses 'qz'"));
  json = tiny_json();
  json["added_tokens"][0].erase("content");
  EXPECT_THAT(load_error(json), HasSubstr("added_tokens[0].content"));
  json = tiny_json();
  json["normalizer"] = {{"type", "NFKC"}};
  EXPECT_THAT(load_error(json), HasSubstr("normalizer.type is 'NFKC'"));
  EXPECT_THAT(bpe_vocab_from_hf_json("{\"model\": ", "cut.json").error(), HasSubstr("cut.json: invalid JSON"));
  EXPECT_THAT(tokenizer_from_hf_json("/nonexistent/tokenizer.json").error(), HasSubstr("cannot read"));
}

// Issue 23: wrong JSON types and hostile ids are errors naming the field, never exceptions or huge allocations.
TEST(HfLoaderTest, WrongTypesAndHostileIdsAreErrorsNamingTheField) {
  nlohmann::json json = tiny_json();
  json["added_tokens"][0]["special"] = "yes";
  EXPECT_THAT(load_error(json), HasSubstr("bad.json: added_tokens[0].special is not true or false"));
  json = tiny_json();
  json["pre_tokenizer"]["use_regex"] = 1;
  EXPECT_THAT(load_error(json), HasSubstr("pre_tokenizer.use_regex is not true or false"));
  json = tiny_json();
  json["model"]["ignore_merges"] = nlohmann::json::array();
  EXPECT_THAT(load_error(json), HasSubstr("model.ignore_merges is not true or false"));
  json = tiny_json();
  json["model"]["continuing_subword_prefix"] = 5;
  EXPECT_THAT(load_error(json), HasSubstr("model.continuing_subword_prefix is set"));
  // One id near 2^30 used to size a table of 2^30 strings (32 GiB) before anything else was checked.
  json = tiny_json();
  json["model"]["vocab"]["far"] = (1 << 30) - 1;
  EXPECT_THAT(load_error(json), HasSubstr("model.vocab['far'] is not an id in 0..1048837"));
  json = tiny_json();
  json["model"]["vocab"]["big"] = 18446744073709551615u;
  EXPECT_THAT(load_error(json), HasSubstr("model.vocab['big'] is not an id"));
  json = tiny_json();
  json["added_tokens"][2]["id"] = (1 << 30) - 1;
  EXPECT_THAT(load_error(json), HasSubstr("added_tokens[2].id is outside 0..1048839"));
  const std::string text = tiny_json().dump();
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", R"({"eos_token": 5})").error(),
              HasSubstr("t.json: (tokenizer_config.json) eos_token is neither a string nor {\"content\": string}"));
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", R"({"bos_token": {"content": 1}})").error(),
              HasSubstr("(tokenizer_config.json) bos_token is neither"));
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", R"({"add_bos_token": "yes"})").error(),
              HasSubstr("(tokenizer_config.json) add_bos_token is not true or false"));
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", "", R"({"eos_token_id": [1, "2"]})").error(),
              HasSubstr("(generation_config.json) eos_token_id[1] is not a token id"));
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", "", R"({"eos_token_id": 1.5})").error(),
              HasSubstr("(generation_config.json) eos_token_id[0] is not a token id"));
  // Nulls are "not set", as transformers reads them.
  EXPECT_TRUE(bpe_vocab_from_hf_json(text, "t.json", R"({"bos_token": null, "add_bos_token": null})", "{}").ok());
  // Nesting deep enough to overflow the stack in a recursive copy or dump is refused at the parse.
  EXPECT_THAT(bpe_vocab_from_hf_json(std::string(200000, '[') + std::string(200000, ']'), "deep.json").error(),
              HasSubstr("deep.json: JSON nested deeper than 64 levels"));
  EXPECT_THAT(bpe_vocab_from_hf_json(text, "t.json", "", std::string(200000, '[')).error(),
              HasSubstr("(generation_config.json) JSON nested deeper than 64 levels"));
}

TEST(HfLoaderTest, FuzzTruncatedAndMutatedJsonNeverCrashes) {
  const std::string text = tiny_json().dump();
  std::mt19937 rng(7);
  int accepted = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bad = text.substr(0, rng() % text.size());
    if (round % 2 == 1) {
      bad = text;
      for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = char(rng() % 256);
    }
    Result<BpeVocab> vocab = bpe_vocab_from_hf_json(bad, "fuzz.json");
    if (!vocab.ok()) {
      EXPECT_THAT(vocab.error(), HasSubstr("fuzz.json"));
      continue;
    }
    Result<std::unique_ptr<BpeTokenizer>> tok = BpeTokenizer::create(std::move(vocab).value(), "fuzz.json");
    if (tok.ok()) {
      ++accepted;
      (void)(*tok)->encode("hello <|end|> world", true);
    }
  }
  EXPECT_LT(accepted, 300);  // truncations must be refused
}

TEST(BpeTokenizerTest, FuzzRandomBytesRoundTrip) {
  const auto tok = tiny_tokenizer();
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) c = char(rng() % 256);
    EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
  }
}

TEST(GgufBpeTest, Gpt2ModelLoadsWithMergesAndPre) {
  nlohmann::json json = tiny_json();
  std::vector<std::string> tokens(264);
  std::vector<int32_t> types(264, 1);
  for (const auto& [token, id] : json["model"]["vocab"].items()) tokens[size_t(id.get<int>())] = token;
  tokens[261] = "<|end|>";
  types[261] = 3;  // control
  tokens[262] = "<|end|>x";
  types[262] = 4;  // user-defined
  tokens[263] = "<pad>";
  types[263] = 3;
  const std::vector<std::string> merges = {"h e", "l l", "he ll", "hell o", "Ġ w"};
  format::GgufWriter writer;
  writer.set("general.architecture", format::GgufValue::string("llama"));
  writer.set("tokenizer.ggml.model", format::GgufValue::string("gpt2"));
  writer.set("tokenizer.ggml.tokens", format::GgufValue::string_array(tokens));
  writer.set("tokenizer.ggml.token_type", format::GgufValue::i32_array(types));
  writer.set("tokenizer.ggml.merges", format::GgufValue::string_array(merges));
  writer.set("tokenizer.ggml.pre", format::GgufValue::string("qwen2"));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  Result<format::GgufFile> file = format::GgufFile::from_memory(bytes, "bpe.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.error();
  EXPECT_THAT((*tok)->encode("hello world<|end|>12", false), ElementsAre(259, 260, 'o', 'r', 'l', 'd', 261, '1', '2'));

  writer.set("tokenizer.ggml.pre", format::GgufValue::string("no-such-pre"));
  const std::vector<uint8_t> bad_bytes = writer.to_bytes();
  Result<format::GgufFile> bad = format::GgufFile::from_memory(bad_bytes, "bpe.gguf");
  ASSERT_TRUE(bad.ok());
  EXPECT_THAT(tokenizer_from_gguf(*bad).error(), HasSubstr("tokenizer.ggml.pre is 'no-such-pre'"));
  // pagoda once wrote "gpt2", which llama.cpp refuses (its name is "gpt-2"): an error that says so.
  writer.set("tokenizer.ggml.pre", format::GgufValue::string("gpt2"));
  const std::vector<uint8_t> old_bytes = writer.to_bytes();
  Result<format::GgufFile> old = format::GgufFile::from_memory(old_bytes, "bpe.gguf");
  ASSERT_TRUE(old.ok());
  EXPECT_THAT(tokenizer_from_gguf(*old).error(), HasSubstr("'gpt-2'"));
}

// tokenizer.json -> GGUF keys (add_bpe_vocabulary) -> tokenizer_from_gguf: the same ids, roles and stop tokens;
// missing ids padded as unused; no BOS key when the file did not say (the reader's llama-bpe default applies).
TEST(GgufBpeTest, WrittenVocabularyReadsBackAsTheSameTokenizer) {
  nlohmann::json json = tiny_json();
  json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", std::string(kQwen2SplitRegex)}}}, {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  json["normalizer"] = {{"type", "NFC"}};
  json["added_tokens"].push_back({{"id", 264}, {"content", "<|im_end|>"}, {"special", true}});
  json["added_tokens"].push_back({{"id", 265}, {"content", "<|bos|>"}, {"special", true}});
  const std::string config = R"({"eos_token": "<pad>", "bos_token": "<|bos|>", "add_bos_token": true})";
  const std::string generation = R"({"eos_token_id": [263, 261]})";
  Result<BpeVocab> vocab = bpe_vocab_from_hf_json(json.dump(), "t.json", config, generation);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_EQ(vocab->eos_id, 263);
  EXPECT_THAT(vocab->stop_ids, ElementsAre(261));
  Result<std::unique_ptr<BpeTokenizer>> direct = BpeTokenizer::create(*vocab, "t.json");
  ASSERT_TRUE(direct.ok()) << direct.error();

  format::GgufWriter writer;
  EXPECT_THAT(add_bpe_vocabulary(*vocab, 265, writer, "t.json").message(),
              HasSubstr("has 266 tokens but the model's vocab_size is 265"));
  ASSERT_TRUE(add_bpe_vocabulary(*vocab, 300, writer, "t.json").ok());
  const std::vector<uint8_t> bytes = writer.to_bytes();
  Result<format::GgufFile> file = format::GgufFile::from_memory(bytes, "t.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(*file->get_string("tokenizer.ggml.pre").value(), "qwen2");
  Result<std::unique_ptr<Tokenizer>> read = tokenizer_from_gguf(*file);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ((*read)->vocab_size(), 300);
  EXPECT_EQ((*read)->token_bytes(299, -1), "");  // "[PAD299]" is an id, not text
  std::mt19937 rng(7);
  const std::string alphabet =
      "helo wrd12<|end|>x<pad>\n\t'sCa\xC3\xA9"
      "e\xCC\x81";
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int n = int(rng() % 24); n > 0; --n) text += alphabet[rng() % alphabet.size()];
    for (bool bos : {false, true}) EXPECT_EQ((*read)->encode(text, bos), (*direct)->encode(text, bos)) << text;
  }
  EXPECT_EQ((*read)->encode("", true), std::vector<TokenId>{265});
  for (const Tokenizer* t :
       {static_cast<const Tokenizer*>(direct->get()), static_cast<const Tokenizer*>(read->get())}) {
    EXPECT_TRUE(t->ends_generation(263));  // EOS
    EXPECT_TRUE(t->ends_generation(261));  // generation_config.json
    EXPECT_TRUE(t->ends_generation(264));  // <|im_end|>, known by its text
    EXPECT_FALSE(t->ends_generation(262));
    EXPECT_FALSE(t->ends_generation(-1));
  }

  // Without a TemplateProcessing or add_bos_token, the key stays out: llama-bpe then adds BOS (llama.cpp's
  // default), qwen2 does not.
  vocab->add_bos_set = false;
  vocab->add_bos = false;
  format::GgufWriter unsaid;
  ASSERT_TRUE(add_bpe_vocabulary(*vocab, 300, unsaid, "t.json").ok());
  const std::vector<uint8_t> unsaid_bytes = unsaid.to_bytes();  // the file borrows them
  Result<format::GgufFile> unsaid_file = format::GgufFile::from_memory(unsaid_bytes, "u.gguf");
  ASSERT_TRUE(unsaid_file.ok());
  EXPECT_FALSE(unsaid_file->get_bool("tokenizer.ggml.add_bos_token").value().has_value());
  EXPECT_FALSE(bpe_vocab_from_gguf(*unsaid_file).value().add_bos);

  // GPT-2's split is written under llama.cpp's name, gpt-2 (llama.cpp refuses pagoda's old "gpt2").
  BpeVocab gpt2 = *vocab;
  gpt2.split_regexes = {std::string(kGpt2SplitRegex)};
  gpt2.nfc = false;
  format::GgufWriter gpt2_writer;
  ASSERT_TRUE(add_bpe_vocabulary(gpt2, 300, gpt2_writer, "t.json").ok());
  const std::vector<uint8_t> gpt2_bytes = gpt2_writer.to_bytes();
  Result<format::GgufFile> gpt2_file = format::GgufFile::from_memory(gpt2_bytes, "g.gguf");
  ASSERT_TRUE(gpt2_file.ok());
  EXPECT_EQ(*gpt2_file->get_string("tokenizer.ggml.pre").value(), "gpt-2");
  EXPECT_TRUE(tokenizer_from_gguf(*gpt2_file).ok());

  // A vocabulary read from a GGUF keeps its name when written again.
  Result<BpeVocab> reread = bpe_vocab_from_gguf(*file);
  ASSERT_TRUE(reread.ok()) << reread.error();
  EXPECT_EQ(reread->pre_name, "qwen2");

  // A split the GGUF names cannot say is refused, not written wrongly.
  vocab->nfc = false;
  format::GgufWriter odd;
  EXPECT_THAT(add_bpe_vocabulary(*vocab, 300, odd, "t.json").message(), HasSubstr("no tokenizer.ggml.pre name"));
}

// tokenizer.ggml.model "gemma4": UTF-8 tokens with spaces as U+2581, merged from characters within each line,
// <0xNN> byte tokens for characters without a token, a run of newlines taken whole, BOS always (llama.cpp).
TEST(GgufBpeTest, Gemma4Utf8VocabularyMergesCharactersAndFallsBackToByteTokens) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);  // byte
  }
  for (const char* t : {"\xE2\x96\x81", "h", "i", "hi", "\xE2\x96\x81hi", "\n", "\n\n", "<bos>"}) {
    tokens.push_back(t);
    types.push_back(1);
  }
  types.back() = 3;  // <bos> is control
  const TokenId space = 256, h = 257, i = 258, hi = 259, space_hi = 260, newline = 261, two_newlines = 262, bos = 263;
  format::GgufWriter writer;
  writer.set("tokenizer.ggml.model", format::GgufValue::string("gemma4"));
  writer.set("tokenizer.ggml.tokens", format::GgufValue::string_array(tokens));
  writer.set("tokenizer.ggml.token_type", format::GgufValue::i32_array(types));
  writer.set("tokenizer.ggml.merges", format::GgufValue::string_array({"h i", "\xE2\x96\x81 hi"}));
  writer.set("tokenizer.ggml.bos_token_id", format::GgufValue::u32(uint32_t(bos)));
  writer.set("tokenizer.ggml.add_bos_token", format::GgufValue::boolean(false));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  Result<format::GgufFile> file = format::GgufFile::from_memory(bytes, "gemma4.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.error();
  EXPECT_THAT((*tok)->encode(" hi\n\nhih", false), ElementsAre(space_hi, two_newlines, hi, h));
  EXPECT_THAT((*tok)->encode("\n\n\n", false), ElementsAre(newline, newline, newline));  // no merge, no token
  EXPECT_THAT((*tok)->encode("i\xC3\xA9", false), ElementsAre(i, 0xC3, 0xA9));           // é as byte tokens
  EXPECT_THAT((*tok)->encode("  ", true), ElementsAre(bos, space, space));  // BOS despite add_bos_token false
  EXPECT_EQ((*tok)->decode((*tok)->encode(" hi\n\ni\xC3\xA9 h", false)), " hi\n\ni\xC3\xA9 h");
  // A whole line is one piece: a megabyte line must not take quadratic time.
  std::string line;
  for (int k = 0; k < (1 << 19); ++k) line += "hi";
  const std::vector<TokenId> ids = (*tok)->encode(line, false);
  EXPECT_EQ(ids.size(), size_t(1) << 19);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), hi), std::ptrdiff_t(1) << 19);
}

}  // namespace
}  // namespace pagoda
