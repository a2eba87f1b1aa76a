// The tokenizer.json reader for WordPiece: a BERT-style file becomes llama.cpp's spelling (special tokens kept,
// "##" continuations bare, word starts after U+2581) with its normalizer flags, [CLS]/[SEP] from either
// post-processor and HF's max_input_chars_per_word; tokenizer_from_hf_json picks it by model.type; what it does not
// run is refused by field; type-confused files load or fail by name, never crash.
#include "tokenizer/hf_wordpiece_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/json_mutations.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace pagoda {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json bert_tokenizer_json() {
  return {{"added_tokens",
           {{{"id", 0}, {"content", "[PAD]"}, {"special", true}},
            {{"id", 1}, {"content", "[UNK]"}, {"special", true}},
            {{"id", 2}, {"content", "[CLS]"}, {"special", true}},
            {{"id", 3}, {"content", "[SEP]"}, {"special", true}}}},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab",
             {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"play", 4}, {"##ing", 5}, {"caf", 6},
              {"##e", 7}, {"!", 8}}}}}};
}

TEST(HfWordPieceLoaderTest, ReadsABertTokenizerJsonInLlamaCppsSpelling) {
  Result<WordPieceVocab> vocab = wordpiece_vocab_from_hf_json(bert_tokenizer_json().dump(), "tokenizer.json");
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_THAT(vocab->pieces, ElementsAre("[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81play", "ing",
                                         "\xE2\x96\x81" "caf", "e", "\xE2\x96\x81!"));
  EXPECT_EQ(vocab->cls_id, 2);
  EXPECT_EQ(vocab->sep_id, 3);
  EXPECT_EQ(vocab->unk_id, 1);
  EXPECT_TRUE(vocab->lowercase);
  EXPECT_TRUE(vocab->strip_accents);  // null follows lowercase
  EXPECT_EQ(vocab->max_word_chars, 100);
  const WordPieceTokenizer tok(std::move(vocab).value());
  EXPECT_THAT(tok.encode("Playing Caf\xC3\xA9!", true), ElementsAre(2, 4, 5, 6, 7, 8, 3));
}

TEST(HfWordPieceLoaderTest, BertProcessingAndNormalizerFlags) {
  json j = bert_tokenizer_json();
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}};
  j["normalizer"]["lowercase"] = false;
  Result<WordPieceVocab> vocab = wordpiece_vocab_from_hf_json(j.dump(), "t.json");
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  EXPECT_FALSE(vocab->lowercase);
  EXPECT_FALSE(vocab->strip_accents);
  EXPECT_EQ(vocab->cls_id, 2);
}

TEST(HfWordPieceLoaderTest, UnsupportedFieldsAreRefusedByName) {
  const auto error_of = [](const json& j) {
    Result<WordPieceVocab> vocab = wordpiece_vocab_from_hf_json(j.dump(), "t.json");
    EXPECT_FALSE(vocab.ok());
    return vocab.ok() ? std::string() : vocab.error();
  };
  json j = bert_tokenizer_json();
  j["normalizer"]["clean_text"] = false;
  EXPECT_THAT(error_of(j), HasSubstr("normalizer.clean_text"));
  j = bert_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_THAT(error_of(j), HasSubstr("pre_tokenizer.type"));
  j = bert_tokenizer_json();
  j["model"]["unk_token"] = "<unk>";
  EXPECT_THAT(error_of(j), HasSubstr("model.unk_token"));
  j = bert_tokenizer_json();
  j["model"]["vocab"]["dup"] = 4;
  EXPECT_THAT(error_of(j), HasSubstr("reuses id 4"));
}

TEST(HfWordPieceLoaderTest, TokenizerFromHfJsonPicksWordPieceByModelType) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pagoda_hf_wordpiece_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tokenizer.json").string();
  std::ofstream(path) << bert_tokenizer_json().dump();
  Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_hf_json(path);
  ASSERT_TRUE(tok.ok()) << tok.error();
  EXPECT_THAT((*tok)->encode("play", true), ElementsAre(2, 4, 3));
  std::filesystem::remove_all(dir);
}

TEST(HfWordPieceLoaderTest, TypeConfusedFilesLoadOrFailByName) {
  testing_support::for_each_type_confusion<json>(
      bert_tokenizer_json(),
      [](const json& variant, const std::string& where) {
        SCOPED_TRACE(where);
        Result<WordPieceVocab> vocab =
            wordpiece_vocab_from_hf_json(variant.dump(-1, ' ', false, json::error_handler_t::replace), "fuzz.json");
        if (!vocab.ok()) {
          EXPECT_EQ(vocab.error().rfind("fuzz.json: ", 0), 0u) << vocab.error();
          return;
        }
        const WordPieceTokenizer tok(std::move(vocab).value());
        (void)tok.decode(tok.encode("Playing [SEP] caf\xC3\xA9 \xff", true, true));
      },
      60);
}

}  // namespace
}  // namespace pagoda
