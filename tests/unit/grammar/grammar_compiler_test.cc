// Tests for GrammarCompiler and GrammarSpec (src/grammar/grammar_compiler.h, grammar_spec.h): each kind compiles,
// the cache returns the same compiled grammar for the same spec, evicts the least recently used, remembers
// failures; one compiled grammar serves matchers on several threads at once (its masks are built once); a compile
// is bounded by its work limit and stops when its caller says so, and a stopped compile is not cached.
#include "grammar/grammar_compiler.h"

#include <gtest/gtest.h>

#include <atomic>
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

// Nested counted repeats lower to few NFA states per level but determinize into huge subsets: each front end's
// spelling of them is refused by the work limit, naming it, instead of taking seconds and gigabytes.
TEST(GrammarCompiler, NestedCountedRepeatsAreRefusedByTheWorkLimit) {
  GrammarCompiler compiler(TokenVocabulary::bytes(), 0);
  const GrammarSpec hostile[] = {
      spec(GrammarSpec::Kind::kRegex, "(a{1,1000}){1,1000}"),
      spec(GrammarSpec::Kind::kRegex, "((a{1,1000}){1,1000}){1,1000}"),
      spec(GrammarSpec::Kind::kRegex, "(x*y*z*){1,10000}"),
      spec(GrammarSpec::Kind::kJsonSchema, R"({"type":"string","pattern":"^(a{1,100}){1,100}$"})"),
      spec(GrammarSpec::Kind::kGbnf, R"(root ::= (("a"){1,1000}){1,1000})"),
  };
  for (const GrammarSpec& s : hostile) {
    auto g = compiler.compile(s);
    ASSERT_FALSE(g.ok()) << s.text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << s.text;
    EXPECT_NE(g.error().find("grammar too"), std::string::npos) << s.text << ": " << g.error();
  }
  // The same work limit, lowered, refuses a grammar that compiles under the default one.
  const GrammarSpec ordinary = spec(GrammarSpec::Kind::kRegex, "[a-z]{1,100}@[a-z]{1,50}\\.(com|org)");
  ASSERT_TRUE(compiler.compile(ordinary).ok());
  BuildLimits tiny;
  tiny.max_work = 1000;
  GrammarCompiler strict(TokenVocabulary::bytes(), 0, tiny);
  auto refused = strict.compile(ordinary);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("more than 1000 steps"), std::string::npos) << refused.error();
}

TEST(GrammarCompiler, AStoppedCompileEndsCancelledAndIsNotCached) {
  GrammarCompiler compiler(TokenVocabulary::bytes());
  const GrammarSpec slow = spec(GrammarSpec::Kind::kRegex, "(a|b|c|d){0,2000}(e|f){0,2000}");
  std::atomic<int> polls{0};
  auto stopped = compiler.compile(slow, [&] { return ++polls >= 2; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled) << stopped.error();
  EXPECT_EQ(polls.load(), 2);
  EXPECT_EQ(compiler.num_cached(), 0u);
  EXPECT_FALSE(compiler.cached(slow).has_value());
  // Compiled again without the stop, it succeeds and is cached from then on.
  auto done = compiler.compile(slow);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_TRUE(testing::matches(*done, "abcdef"));
  auto hit = compiler.cached(slow);
  ASSERT_TRUE(hit.has_value());
  ASSERT_TRUE(hit->ok());
  EXPECT_EQ(hit->value(), done.value());
}

// The JSON Schema front end polls the stop hook too, between the schemas its $refs name.
TEST(GrammarCompiler, TheSchemaConverterStopsBetweenReferences) {
  const GrammarSpec chain = spec(GrammarSpec::Kind::kJsonSchema, R"({"$ref":"#/$defs/d0","$defs":{
      "d0":{"type":"array","items":{"$ref":"#/$defs/d1"}},
      "d1":{"type":"array","items":{"$ref":"#/$defs/d2"}},
      "d2":{"type":"null"}}})");
  GrammarCompiler compiler(TokenVocabulary::bytes(), 0);
  auto stopped = compiler.compile(chain, [] { return true; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled) << stopped.error();
  auto done = compiler.compile(chain, [] { return false; });
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_TRUE(testing::matches(*done, "[[null]]"));
  EXPECT_FALSE(testing::matches(*done, "[null]"));
}

}  // namespace
}  // namespace pagoda::grammar
