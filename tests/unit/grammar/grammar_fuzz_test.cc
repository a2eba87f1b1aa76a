// Fuzz tests of the front ends (GBNF, regex, JSON Schema): random and mutated inputs, bounded counts and fixed
// seeds. Every input must give a grammar or an error, never a crash, hang or unbounded memory (the ASan+UBSan
// build runs these); a grammar that compiles gets a short random walk through its matcher. Also ambiguous
// grammars: right recursion kept linear by tail returns, parses that multiply with every byte (the work bound is
// an error, never dropped stacks), and more than 256 stacks at once, every one kept.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_parser.h"
#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

// Limits small enough that the worst accepted input stays quick under the sanitizers.
const BuildLimits kFuzzLimits{.max_nfa_states = 1u << 16,
                              .max_dfa_states = 1u << 13,
                              .max_table_bytes = 8u << 20,
                              .max_work = 1u << 22,
                              .should_stop = {}};

std::string mutate(std::string s, std::mt19937_64& rng, const std::string& alphabet) {
  const int n = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int i = 0; i < n; ++i) {
    const size_t pos = s.empty() ? 0 : std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
    const char c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
      case 0:
        if (!s.empty()) s[pos] = c;
        break;
      case 1: s.insert(pos, 1, c); break;
      case 2:
        if (!s.empty()) s.erase(pos, 1);
        break;
      default:
        if (!s.empty()) s.insert(pos, s.substr(pos, std::uniform_int_distribution<size_t>(1, 8)(rng)));
        break;
    }
  }
  return s;
}

std::string random_text(std::mt19937_64& rng, const std::string& alphabet, size_t max_len) {
  std::string s;
  const size_t n = std::uniform_int_distribution<size_t>(0, max_len)(rng);
  for (size_t i = 0; i < n; ++i) s += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
  return s;
}

// A short random walk over byte tokens: the mask and accept_token agree, and the walk never gets stuck.
void walk(Grammar g, std::mt19937_64& rng) {
  auto cg = testing::with_bytes(std::move(g));
  GrammarMatcher m(cg, 4);
  std::vector<uint32_t> mask(cg->vocabulary().mask_words());
  for (int step = 0; step < 12 && !m.is_complete(); ++step) {
    m.fill_mask(mask);
    std::vector<TokenId> ids;
    for (TokenId id = 0; id < 257; ++id) {
      if (mask[size_t(id) >> 5] >> (id & 31) & 1) ids.push_back(id);
    }
    ASSERT_FALSE(ids.empty());
    const TokenId id = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    if (!m.accept_token(id)) {
      ASSERT_TRUE(m.overflowed());  // the one way a token the mask allowed is refused
      break;
    }
  }
  m.rollback(std::min(2, m.num_rollback_tokens()));
}

TEST(GrammarFuzz, Gbnf) {
  std::mt19937_64 rng(101);
  const std::vector<std::string> seeds = {
      "root ::= \"a\" | b\nb ::= [a-z]+ \"x\"?",
      "root ::= (\"{\" ws (str \":\" ws val)* \"}\")\nval ::= str | [0-9]+ | root\nstr ::= \"\\\"\" [^\"\\\\]* "
      "\"\\\"\"\nws ::= [ \\t\\n]{0,3}",
      "root ::= x{2,5} y*\nx ::= \"ab\" | [\\x00-\\U0010FFFF]\ny ::= ( \"(\" root \")\" )?",
      "# comment\nroot ::= [^\\n]+ \"\\n\" # tail\n"};
  const std::string alphabet = "root::=\"ab|()[]^-*+?{}0123456789,.#\\ \n\txyuU";
  int32_t num_ok = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text =
        i % 3 == 0 ? random_text(rng, alphabet, 40) : mutate(seeds[size_t(i) % seeds.size()], rng, alphabet);
    Result<Grammar> g = parse_gbnf(text, kFuzzLimits);
    if (g.ok()) {
      ++num_ok;
      walk(std::move(g).value(), rng);
    } else {
      EXPECT_FALSE(g.error().empty());
    }
  }
  EXPECT_GT(num_ok, 50);
}

TEST(GrammarFuzz, Regex) {
  std::mt19937_64 rng(202);
  const std::vector<std::string> seeds = {"^[a-z]{2,4}(\\d+|x)?$", "(a|b)*c{1,3}[^d-f]", "\\w+@\\w+\\.com",
                                          "(?:ab)+(?<n>c|\\u00e9)", "[\\s\\S]{0,5}.?"};
  const std::string alphabet = "ab()[]{}|^$*+?.,-\\dwsSuxk0123456789<>=!:P";
  int32_t num_ok = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string pattern =
        i % 3 == 0 ? random_text(rng, alphabet, 24) : mutate(seeds[size_t(i) % seeds.size()], rng, alphabet);
    Result<Grammar> g = parse_regex(pattern, kFuzzLimits);
    if (g.ok()) {
      ++num_ok;
      walk(std::move(g).value(), rng);
    }
    GrammarBuilder b;
    (void)regex_to_expr(pattern, RegexMode::kJsonStringSearch, b);
  }
  EXPECT_GT(num_ok, 100);
}

TEST(GrammarFuzz, JsonSchema) {
  std::mt19937_64 rng(303);
  const std::vector<std::string> seeds = {
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":300},"b":{"type":"array","items":{"$ref":"#"}}},"required":["a"]})",
      R"({"anyOf":[{"type":"string","pattern":"^x+$"},{"enum":[1,"a",null]},{"type":"number","exclusiveMinimum":0}]})",
      R"({"$defs":{"n":{"type":["object","null"],"properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"})",
      R"({"allOf":[{"type":"object","properties":{"x":{"type":"string","format":"date"}}},{"required":["x"]}],"additionalProperties":{"type":"boolean"}})",
      R"({"type":"array","prefixItems":[{"const":1},{"type":"string","maxLength":3}],"minItems":1,"maxItems":4,"items":true})"};
  const std::string alphabet = "{}[]\":,0123456789-.abtypeobjectstringrequiredminmaxItems$refanyOf#/ \\";
  int32_t num_ok = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text = mutate(seeds[size_t(i) % seeds.size()], rng, alphabet);
    Result<Grammar> g = json_schema_to_grammar(std::string_view(text), {}, kFuzzLimits);
    if (g.ok()) {
      ++num_ok;
      walk(std::move(g).value(), rng);
    }
  }
  // Random JSON values as schemas.
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_text(rng, "{}[]\":,01ab-.tnulfrse", 30);
    (void)json_schema_to_grammar(std::string_view(text), {}, kFuzzLimits);
  }
  EXPECT_GT(num_ok, 100);
}

TEST(GrammarFuzz, RightRecursiveAmbiguityStaysTractable) {
  // After n a's, the parses differ in which calls still owe a "b": 2^n stacks, were every return kept; a return
  // into the end of a rule goes straight on (a tail call), so they are at most n + 1, by how many b's are owed.
  auto g = testing::with_bytes(parse_gbnf("root ::= s\ns ::= \"a\" s | \"a\" s \"b\" | \"c\"").value());
  GrammarMatcher m(g);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(m.accept_token('a'));
  EXPECT_LE(m.num_stacks(), 201u);
  EXPECT_FALSE(m.overflowed());
  ASSERT_TRUE(m.accept_token('c'));
  std::vector<uint32_t> mask(g->vocabulary().mask_words());
  m.fill_mask(mask);
  EXPECT_TRUE(mask[size_t('b') >> 5] >> ('b' & 31) & 1);
  while (!m.can_end()) ASSERT_TRUE(m.accept_token('b'));
  EXPECT_TRUE(m.can_end());
}

TEST(GrammarFuzz, ExponentialAmbiguityIsAnErrorNotADroppedStack) {
  // After n a's, each call owes a "b" (called as s) or a "c" (called through t): 2^n distinct stacks. The matcher
  // follows them until a move passes its work bound, then is overflowed: it accepts nothing more and allows
  // nothing, rather than dropping stacks and refusing valid text.
  auto g = testing::with_bytes(
      parse_gbnf("root ::= s\ns ::= \"a\" s \"b\" | \"a\" t \"c\" | \"d\"\nt ::= s | \"e\"").value());
  GrammarMatcher m(g);
  int accepted = 0;
  while (accepted < 64 && m.accept_token('a')) ++accepted;
  EXPECT_GT(accepted, 8);  // every stack kept while within the bound
  EXPECT_LT(accepted, 64);
  EXPECT_TRUE(m.overflowed());
  std::vector<uint32_t> mask(g->vocabulary().mask_words(), 0xFFFFFFFFu);
  m.fill_mask(mask);
  EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; }));
  EXPECT_FALSE(m.accept_token('d'));
  EXPECT_FALSE(m.accept_token(256));
}

TEST(GrammarFuzz, MoreThan256StacksAcceptEveryValidText) {
  // 300 alternatives, each a rule of its own, alike up to their last byte: 300 stacks live at once, and the text of
  // each alternative, the last ones included, must be accepted.
  std::string gbnf = "root ::= r0";
  for (int k = 1; k < 300; ++k) gbnf += fmt::format(" | r{}", k);
  gbnf += "\n";
  for (int k = 0; k < 300; ++k) gbnf += fmt::format("r{} ::= \"x\" [a-z]* \"{};\"\n", k, k);
  Result<Grammar> parsed = parse_gbnf(gbnf);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  auto g = testing::with_bytes(std::move(parsed).value());
  GrammarMatcher probe(g);
  ASSERT_TRUE(probe.accept_bytes("xab"));
  EXPECT_GE(probe.num_stacks(), 300u);
  for (int k = 0; k < 300; ++k) {
    const std::string text = fmt::format("xab{};", k);
    EXPECT_TRUE(testing::matches(g, text)) << text;
    // Byte by byte through the mask, too.
    GrammarMatcher m(g);
    std::vector<uint32_t> mask(g->vocabulary().mask_words());
    for (const char c : text) {
      m.fill_mask(mask);
      ASSERT_TRUE(mask[uint8_t(c) >> 5] >> (uint8_t(c) & 31) & 1) << text;
      ASSERT_TRUE(m.accept_token(uint8_t(c)));
    }
    EXPECT_TRUE(m.can_end());
  }
  EXPECT_FALSE(testing::matches(g, "xab300;"));
}

}  // namespace
}  // namespace pagoda::grammar
