// Type-confused tokenizer files: tokenizer.json, tokenizer_config.json and generation_config.json with every field
// set to each JSON type (and each member removed), and a GGUF's tokenizer.* keys set to every GGUF type. Each
// load ends in an error naming the file, or in a tokenizer that encodes and decodes; never an exception, an abort,
// a huge allocation or (under ASan) a bad read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "support/gguf_mutations.h"
#include "support/json_mutations.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {
namespace {

using nlohmann::json;

// A small byte-level BPE tokenizer.json using every section the loader reads: 256 byte tokens and 3 merges,
// NFC, a Split + ByteLevel pre-tokenizer, added tokens, a TemplateProcessing post-processor and a decoder.
json fuzz_tokenizer_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, char(b)))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  return {{"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", "\\s+|\\S+"}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"added_tokens",
           {{{"id", 259}, {"content", "<s>"}, {"special", true}, {"lstrip", false}, {"rstrip", false}},
            {{"id", 260}, {"content", "</s>"}, {"special", true}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}}}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"continuing_subword_prefix", nullptr},
            {"vocab", vocab},
            {"merges", {"h e", json::array({"l", "l"}), "he ll"}}}}};
}

// Loads, and when that works, builds and runs the tokenizer.
void expect_clean_load(const std::string& tokenizer, const std::string& config, const std::string& generation) {
  Result<BpeVocab> vocab = bpe_vocab_from_hf_json(tokenizer, "fuzz.json", config, generation);
  if (!vocab.ok()) {
    EXPECT_EQ(vocab.error().rfind("fuzz.json: ", 0), 0u) << vocab.error();
    EXPECT_EQ(vocab.error().find('\n'), std::string::npos) << vocab.error();
    return;
  }
  Result<std::unique_ptr<BpeTokenizer>> tok = BpeTokenizer::create(std::move(vocab).value(), "fuzz.json");
  if (!tok.ok()) return;
  const std::vector<TokenId> ids = (*tok)->encode("hello <s> world\n</s>", true);
  (void)(*tok)->decode(ids);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

TEST(TokenizerFilesFuzzTest, TypeConfusedTokenizerJson) {
  const json base = fuzz_tokenizer_json();
  expect_clean_load(dump(base), "", "");
  // The 259 vocabulary entries are alike: 40 pointers, spread evenly, cover a few of them and the other fields.
  testing_support::for_each_type_confusion<json>(
      base,
      [](const json& variant, const std::string& where) {
        SCOPED_TRACE(where);
        expect_clean_load(dump(variant), "", "");
      },
      40);
}

TEST(TokenizerFilesFuzzTest, TypeConfusedTokenizerConfigAndGenerationConfig) {
  const std::string tokenizer = dump(fuzz_tokenizer_json());
  const json config = {{"bos_token", "<s>"},
                       {"eos_token", {{"content", "</s>"}, {"lstrip", false}}},
                       {"add_bos_token", true},
                       {"chat_template", "{{ messages }}"}};
  const json generation = {{"eos_token_id", {260, 259}}, {"bos_token_id", 259}};
  testing_support::for_each_type_confusion<json>(config, [&](const json& variant, const std::string& where) {
    SCOPED_TRACE(where);
    expect_clean_load(tokenizer, dump(variant), dump(generation));
  });
  testing_support::for_each_type_confusion<json>(generation, [&](const json& variant, const std::string& where) {
    SCOPED_TRACE(where);
    expect_clean_load(tokenizer, dump(config), dump(variant));
  });
}

// The bundled model's tokenizer keys, each set to every GGUF type.
TEST(TokenizerFilesFuzzTest, TypeSwappedGgufTokenizerKeys) {
  auto bundled = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(bundled.ok()) << bundled.error();
  int num_loaded = 0;
  for (const char* key :
       {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
        "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.add_bos_token",
        "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.pre"}) {
    for (const format::GgufValue& value : testing_support::type_swapped_gguf_values()) {
      SCOPED_TRACE(std::string(key) + " as " + std::string(format::gguf_value_type_name(value.type)));
      const std::vector<uint8_t> bytes = testing_support::with_metadata(*bundled, key, value, /*keep_tensors=*/false);
      auto file = format::GgufFile::from_memory(bytes, "typed.gguf");
      ASSERT_TRUE(file.ok()) << file.error();
      Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
      if (!tok.ok()) {
        EXPECT_EQ(tok.error().rfind("typed.gguf: ", 0), 0u) << tok.error();
        continue;
      }
      ++num_loaded;
      const std::vector<TokenId> ids = (*tok)->encode("Once upon a time \xff\xfe", true);
      (void)(*tok)->decode(ids);
    }
  }
  EXPECT_GT(num_loaded, 0);  // some values are valid (or the key optional), so both paths run
}

}  // namespace
}  // namespace pagoda
