// llama.cpp's pre-tokenizer table run through PreTokenizer: hand-written strings per regex family (digit
// grouping, contractions, CJK, punctuation runs, whitespace runs, emoji, letter case), the lookup by name and
// the default for a vocabulary without a name.
#include "tokenizer/llama_pre_tokenizers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> split_by(std::string_view name, std::string_view text) {
  const LlamaPreTokenizer* spec = find_llama_pre_tokenizer(name);
  EXPECT_NE(spec, nullptr) << name;
  if (spec == nullptr) return {};
  Result<PreTokenizer> pre =
      PreTokenizer::create(std::vector<std::string>(spec->regexes.begin(), spec->regexes.end()), RegexDialect::kEcmaScript);
  EXPECT_TRUE(pre.ok()) << name << ": " << (pre.ok() ? "" : pre.error());
  if (!pre.ok()) return {};
  std::vector<std::string> out;
  for (std::string_view piece : pre->split(text)) out.emplace_back(piece);
  return out;
}

TEST(LlamaPreTokenizersTest, EveryEntryCompilesAndSplitsWithoutLosingText) {
  const std::string text = "Hello, y'all! 12345 你好 ああ 🦙.cpp\n\n  \tx IMGIMGABZ <sentinel:3> $x+1";
  for (std::string_view name : {"default", "gpt-2", "llama-bpe", "qwen2", "qwen35", "jais-2", "deepseek-llm",
                                "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "falcon", "starcoder",
                                "poro-chat", "viking", "tekken", "chameleon", "llama4", "granite-embed-multi-97m",
                                "bailingmoe", "seed-coder", "ufakzeka", "laguna", "exaone-moe", "minicpm5"}) {
    std::string joined;
    for (const std::string& piece : split_by(name, text)) joined += piece;
    EXPECT_EQ(joined, text) << name;
  }
  EXPECT_THAT(supported_llama_pre_tokenizer_names(), HasSubstr("command-r"));
  EXPECT_EQ(find_llama_pre_tokenizer("gpt2"), nullptr);  // llama.cpp's name is gpt-2
  EXPECT_EQ(default_llama_pre_tokenizer().name, "default");
}

// convert --from hf names a tokenizer.json's split the way llama.cpp reads it back, with the same flags.
TEST(LlamaPreTokenizersTest, TokenizerJsonSplitsGetLlamaCppsNames) {
  EXPECT_EQ(llama_pre_name_for_hf_split(kGpt2SplitRegex, false, false), "gpt-2");
  EXPECT_EQ(llama_pre_name_for_hf_split(kLlama3SplitRegex, false, true), "llama-bpe");
  EXPECT_EQ(llama_pre_name_for_hf_split(kQwen2SplitRegex, true, false), "qwen2");
  EXPECT_EQ(llama_pre_name_for_hf_split(kQwen2SplitRegex, false, false), "");  // flags the name would not give
  EXPECT_EQ(llama_pre_name_for_hf_split("\\s+", false, false), "");
  for (const auto& [regex, nfc, ignore_merges] :
       {std::tuple{kGpt2SplitRegex, false, false}, {kLlama3SplitRegex, false, true}, {kQwen2SplitRegex, true, false}}) {
    const LlamaPreTokenizer* spec = find_llama_pre_tokenizer(llama_pre_name_for_hf_split(regex, nfc, ignore_merges));
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->nfc, nfc);
    EXPECT_EQ(spec->ignore_merges, ignore_merges);
  }
}

TEST(LlamaPreTokenizersTest, Gpt2ContractionsWordsAndWhitespaceRuns) {
  EXPECT_THAT(split_by("gpt-2", "Hello world's  123"), ElementsAre("Hello", " world", "'s", " ", " 123"));
  EXPECT_THAT(split_by("gpt-2", "I'M x"), ElementsAre("I", "'", "M", " x"));  // case-sensitive contractions
  EXPECT_THAT(split_by("gpt-2", "a\n\n b  "), ElementsAre("a", "\n\n", " b", "  "));
}

TEST(LlamaPreTokenizersTest, Llama3GroupsDigitsByThreeAndContractionsIgnoreCase) {
  EXPECT_THAT(split_by("llama-bpe", "1234567 abc"), ElementsAre("123", "456", "7", " abc"));
  EXPECT_THAT(split_by("llama-bpe", "HELLO'S"), ElementsAre("HELLO", "'S"));
  EXPECT_THAT(split_by("llama-bpe", "...!!\n\nx"), ElementsAre("...!!\n\n", "x"));
  EXPECT_TRUE(find_llama_pre_tokenizer("llama-bpe")->ignore_merges);
  EXPECT_TRUE(find_llama_pre_tokenizer("llama-bpe")->add_bos);
}

TEST(LlamaPreTokenizersTest, Qwen2SplitsEveryDigitAndKeepsCjkRuns) {
  EXPECT_THAT(split_by("qwen2", "12345"), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(split_by("qwen2", "你好 世界!"), ElementsAre("你好", " 世界", "!"));
  EXPECT_TRUE(find_llama_pre_tokenizer("qwen2")->nfc);
  // qwen35 keeps combining marks with their letter.
  EXPECT_THAT(split_by("qwen35", "re\xCC\x81sume\xCC\x81 1"), ElementsAre("re\xCC\x81sume\xCC\x81", " ", "1"));
}

TEST(LlamaPreTokenizersTest, DeepSeekSplitsNewlinesCjkPunctuationAndDigits) {
  EXPECT_THAT(split_by("deepseek-llm", "Hi!!\n你好123"), ElementsAre("Hi", "!!", "\n", "你好", "123"));
  EXPECT_THAT(split_by("deepseek-coder", "Hi!!\n你好123"), ElementsAre("Hi", "!!", "\n", "你好", "1", "2", "3"));
  EXPECT_THAT(split_by("deepseek-v3", "12345 ひらがな"), ElementsAre("123", "45", " ", "ひらがな"));
}

TEST(LlamaPreTokenizersTest, FalconAndStarCoderSplitDigitsAndPunctuation) {
  EXPECT_THAT(split_by("falcon", "x+=1234;"), ElementsAre("x", "+=", "123", "4", ";"));
  EXPECT_THAT(split_by("starcoder", "x=123"), ElementsAre("x", "=", "1", "2", "3"));
  EXPECT_THAT(split_by("default", "a $+ 12345"), ElementsAre("a", " ", "$+", " ", "123", "45"));
}

// Text between two matches is one piece, however many characters the regex skipped.
TEST(LlamaPreTokenizersTest, BloomFamilySplitsOnPunctuationAndSpaces) {
  EXPECT_THAT(split_by("bloom", "Hello, world. 。x"), ElementsAre("Hello", ",", " world", ". 。", "x"));
}

TEST(LlamaPreTokenizersTest, CaseAwareFamiliesSplitCamelCase) {
  EXPECT_THAT(split_by("tekken", "HelloWorld ABCdef"), ElementsAre("Hello", "World", " ABCdef"));
  EXPECT_THAT(split_by("llama4", "don't 12345"), ElementsAre("don't", " ", "123", "45"));
}

TEST(LlamaPreTokenizersTest, EmojiAndWhitespaceRunsStayTogether) {
  EXPECT_THAT(split_by("llama-bpe", " 🦙🦙 \t\n x"), ElementsAre(" 🦙🦙", " \t\n", " x"));
  EXPECT_THAT(split_by("qwen2", "a   b"), ElementsAre("a", "  ", " b"));
}

// Every later regex splits every piece again, the earlier matches included (llama.cpp: the sentinel regex only
// matters before its special-token partition has taken the sentinels out).
// superbpe's second regex matches only empty strings: each match is a cut, as llama.cpp's regex iterator makes it.
TEST(LlamaPreTokenizersTest, SuperbpeGroupsDigitsByThreeFromTheRight) {
  EXPECT_THAT(split_by("superbpe", "x1234567 12"), ElementsAre("x", "1", "234", "567", " ", "12"));
}

TEST(LlamaPreTokenizersTest, ChameleonSplitsEachPieceAgainWithEveryLaterRegex) {
  EXPECT_THAT(split_by("chameleon", "a<sentinel:12>IMGIMGABZ"),
              ElementsAre("a", "<", "sentinel", ":", "1", "2", ">", "IMGIMGABZ"));
}

}  // namespace
}  // namespace pagoda
