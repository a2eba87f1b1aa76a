// Tests for GrammarCompiler and GrammarSpec (src/grammar/grammar_compiler.h, grammar_spec.h): each kind compiles,
// the cache returns the same compiled grammar for the same spec, evicts the least recently used, remembers
// failures; one compiled grammar serves matchers on several threads at once (its masks are built once).
#include "grammar/grammar_compiler.h"

#include <gtest/gtest.h>

#include <thread>

#include "grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

GrammarSpec spec(GrammarSpec::Kind kind, std::string text) {
  GrammarSpec s;
  s.kind = kind;
  s.text = std::move(text);
  return s;
}

TEST(GrammarCompiler, EachKind) {
  GrammarCompiler compiler(TokenVocabulary::bytes());
  auto schema = compiler.compile(
      spec(GrammarSpec::Kind::kJsonSchema,
           R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"required":["b","a"]})"));
  ASSERT_TRUE(schema.ok()) << schema.error();
  EXPECT_TRUE(testing::matches(*schema, R"({"b":1,"a":2})"));  // the text's property order is kept
  EXPECT_FALSE(testing::matches(*schema, R"({"a":2,"b":1})"));
  auto object = compiler.compile(spec(GrammarSpec::Kind::kJsonObject, ""));
  ASSERT_TRUE(object.ok());
  EXPECT_TRUE(testing::matches(*object, R"({"x":[]})"));
  auto gbnf = compiler.compile(spec(GrammarSpec::Kind::kGbnf, R"(root ::= "a"+)"));
  ASSERT_TRUE(gbnf.ok());
  EXPECT_TRUE(testing::matches(*gbnf, "aaa"));
  auto regex = compiler.compile(spec(GrammarSpec::Kind::kRegex, "[0-9]{3}"));
  ASSERT_TRUE(regex.ok());
  EXPECT_TRUE(testing::matches(*regex, "123"));
  GrammarSpec choice = spec(GrammarSpec::Kind::kChoice, "");
  choice.choices = {"yes", "no", "été"};
  auto c = compiler.compile(choice);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(testing::matches(*c, "été"));
  EXPECT_FALSE(testing::matches(*c, "maybe"));
  choice.choices.clear();
  EXPECT_NE(compiler.compile(choice).error().find("empty"), std::string::npos);
  auto bad = compiler.compile(spec(GrammarSpec::Kind::kJsonSchema, "{"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(GrammarCompiler, CachesByCacheKeyWithLruEviction) {
  GrammarCompiler compiler(TokenVocabulary::bytes(), 2);
  auto a1 = compiler.compile(spec(GrammarSpec::Kind::kRegex, "a"));
  auto a2 = compiler.compile(spec(GrammarSpec::Kind::kRegex, "a"));
  ASSERT_TRUE(a1.ok() && a2.ok());
  EXPECT_EQ(a1->get(), a2->get());
  EXPECT_EQ(compiler.num_hits(), 1u);
  EXPECT_EQ(compiler.num_misses(), 1u);
  // Same text, another kind: another grammar.
  auto g = compiler.compile(spec(GrammarSpec::Kind::kGbnf, R"(root ::= "a")"));
  ASSERT_TRUE(g.ok());
  auto a3 = compiler.compile(spec(GrammarSpec::Kind::kRegex, "a"));  // refreshes "a"
  EXPECT_EQ(a3->get(), a1->get());
  compiler.compile(spec(GrammarSpec::Kind::kRegex, "b")).value();  // evicts the GBNF one
  EXPECT_EQ(compiler.num_cached(), 2u);
  const uint64_t misses = compiler.num_misses();
  compiler.compile(spec(GrammarSpec::Kind::kRegex, "a")).value();
  EXPECT_EQ(compiler.num_misses(), misses);
  compiler.compile(spec(GrammarSpec::Kind::kGbnf, R"(root ::= "a")")).value();
  EXPECT_EQ(compiler.num_misses(), misses + 1);
  // Failures are remembered.
  EXPECT_FALSE(compiler.compile(spec(GrammarSpec::Kind::kRegex, "(")).ok());
  const uint64_t hits = compiler.num_hits();
  EXPECT_FALSE(compiler.compile(spec(GrammarSpec::Kind::kRegex, "(")).ok());
  EXPECT_EQ(compiler.num_hits(), hits + 1);
  GrammarSpec compact = spec(GrammarSpec::Kind::kJsonObject, "");
  compact.json_options.allow_whitespace = false;
  EXPECT_NE(compact.cache_key(), spec(GrammarSpec::Kind::kJsonObject, "").cache_key());
}

TEST(GrammarCompiler, OneGrammarServesMatchersOnSeveralThreads) {
  GrammarCompiler compiler(TokenVocabulary::bytes());
  auto g =
      compiler.compile(spec(GrammarSpec::Kind::kJsonSchema, R"({"type":"array","items":{"type":"string"}})")).value();
  const std::string text = R"(["alpha", "beta", "gamma"])";
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      GrammarMatcher m(g);
      std::vector<uint32_t> mask(g->vocabulary().mask_words());
      bool good = true;
      for (const char c : text) {
        m.fill_mask(mask);
        good = good && (mask[uint8_t(c) >> 5] >> (uint8_t(c) & 31) & 1) && m.accept_token(uint8_t(c));
      }
      ok[size_t(t)] = good && m.is_complete();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
  EXPECT_GT(g->num_built_state_masks(), 0u);
}

}  // namespace
}  // namespace pagoda::grammar
