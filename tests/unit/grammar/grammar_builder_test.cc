// GrammarBuilder's lowering of repeated pieces: an item copied many times by a counted repeat is copied as its DFA,
// which must match exactly the strings the repeat means (checked against a brute-force splitter) and keep long
// bounded strings within the default limits; a big piece used in many places is shared as a rule.
#include "grammar/grammar_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/json_string_chars.h"
#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

// Whether `s` splits into between `min` and `max` pieces, each one of `items`.
bool splits(const std::string& s, const std::vector<std::string>& items, uint32_t min, uint32_t max) {
  // reach[i]: the piece counts with which the prefix of length i splits (bit k: k pieces).
  std::vector<uint64_t> reach(s.size() + 1, 0);
  reach[0] = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!reach[i]) continue;
    for (const std::string& item : items) {
      if (s.compare(i, item.size(), item) == 0) reach[i + item.size()] |= (reach[i] << 1);
    }
  }
  for (uint32_t k = min; k <= max && k < 64; ++k) {
    if (reach[s.size()] >> k & 1) return true;
  }
  return false;
}

// Every string over {a, b, c} up to `max_len` bytes.
std::vector<std::string> all_strings(size_t max_len) {
  std::vector<std::string> out{""};
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].size() == max_len) continue;
    for (const char c : std::string("abc")) out.push_back(out[i] + c);
  }
  return out;
}

TEST(GrammarBuilder, CountedRepeatsOfAnAmbiguousItemMatchTheirSplits) {
  const std::vector<std::string> items{"a", "ab", "bca", "c"};
  const std::vector<std::string> texts = all_strings(8);
  for (const auto& [min, max] : {std::pair<uint32_t, uint32_t>{0, 4}, {2, 5}, {4, 4}, {5, kUnbounded}, {0, 7}}) {
    GrammarBuilder b;
    const int32_t root = b.add_rule("root");
    std::vector<GrammarBuilder::Expr> alts;
    for (const std::string& item : items) alts.push_back(b.literal(item));
    b.set_body(root, b.repeat(b.choice(alts), min, max));
    Result<Grammar> g = b.build(root);
    ASSERT_TRUE(g.ok()) << g.error();
    auto cg = testing::with_bytes(std::move(g).value());
    for (const std::string& text : texts) {
      EXPECT_EQ(testing::matches(cg, text), splits(text, items, min, max == kUnbounded ? 63 : max))
          << "'" << text << "' in {" << min << "," << max << "}";
    }
  }
}

TEST(GrammarBuilder, RepeatsOfItemsThatCallRulesStayExact) {
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  const int32_t item = b.add_rule("item");
  b.set_body(item, b.choice({b.literal("x"), b.literal("yz")}));
  b.set_body(root, b.repeat(b.sequence({b.rule_ref(item), b.literal(",")}), 1, 5));
  Result<Grammar> g = b.build(root);
  ASSERT_TRUE(g.ok()) << g.error();
  auto cg = testing::with_bytes(std::move(g).value());
  EXPECT_TRUE(testing::matches(cg, "x,"));
  EXPECT_TRUE(testing::matches(cg, "x,yz,x,x,yz,"));
  EXPECT_FALSE(testing::matches(cg, "x,yz,x,x,yz,x,"));
  EXPECT_FALSE(testing::matches(cg, ""));
}

TEST(GrammarBuilder, LongBoundedJsonStringsFitTheDefaultLimits) {
  // A string of at most 5,000 characters, each any JSON string character (escapes included): copied as its DFA
  // (instead of 5,000 copies of a 200-state NFA), the repeat stays within the default automaton limits.
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.set_body(root, b.sequence({b.literal("\""), b.repeat(json_string_chars(b, CodePointSet::all()), 0, 5000),
                               b.literal("\"")}));
  Result<Grammar> g = b.build(root);
  ASSERT_TRUE(g.ok()) << g.error();
  auto cg = testing::with_bytes(std::move(g).value());
  EXPECT_TRUE(testing::matches(cg, "\"" + std::string(5000, 'a') + "\""));
  EXPECT_TRUE(testing::matches(cg, "\"\\u001f\\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""));
  EXPECT_FALSE(testing::matches(cg, "\"" + std::string(5001, 'a') + "\""));
  EXPECT_FALSE(testing::matches(cg, "\"\\u0041\""));  // only the canonical escapes
}

// level(0) = "<40 bytes>" value, level(k) = "(" level(k-1) "," level(k-1) ")".
std::string level_text(int k) {
  return k == 0 ? std::string(40, 'p') + "v" : "(" + level_text(k - 1) + "," + level_text(k - 1) + ")";
}

TEST(GrammarBuilder, BigPiecesUsedInManyPlacesAreSharedAsRules) {
  // Each level uses the one below twice: inline, level 14 would copy level 0 16,384 times (700,000 automaton
  // states); shared, the upper levels are rules of a few states.
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  const int32_t value = b.add_rule("value");
  b.set_body(value, b.literal("v"));
  GrammarBuilder::Expr level = b.sequence({b.literal(std::string(40, 'p')), b.rule_ref(value)});
  for (int k = 1; k <= 14; ++k) level = b.sequence({b.literal("("), level, b.literal(","), level, b.literal(")")});
  b.set_body(root, level);
  Result<Grammar> g = b.build(root);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LT(g->states.size(), 50000u);  // pieces under 16,384 states in all stay inline
  EXPECT_NE(g->to_string().find("shared-"), std::string::npos);
  auto cg = testing::with_bytes(std::move(g).value());
  const std::string text = level_text(14);
  EXPECT_TRUE(testing::matches(cg, text));
  EXPECT_FALSE(testing::matches(cg, text.substr(0, text.size() - 1)));
  std::string wrong = text;
  wrong[text.size() / 2] = wrong[text.size() / 2] == 'p' ? 'q' : 'p';
  EXPECT_FALSE(testing::matches(cg, wrong));

  // Small pieces stay inline: the same at level 2 makes no shared rule.
  GrammarBuilder small;
  const int32_t small_root = small.add_rule("root");
  const int32_t small_value = small.add_rule("value");
  small.set_body(small_value, small.literal("v"));
  GrammarBuilder::Expr piece = small.sequence({small.literal("p"), small.rule_ref(small_value)});
  for (int k = 1; k <= 2; ++k)
    piece = small.sequence({small.literal("("), piece, small.literal(","), piece, small.literal(")")});
  small.set_body(small_root, piece);
  Result<Grammar> sg = small.build(small_root);
  ASSERT_TRUE(sg.ok()) << sg.error();
  EXPECT_EQ(sg->to_string().find("shared-"), std::string::npos);
  EXPECT_TRUE(testing::matches(testing::with_bytes(std::move(sg).value()), "((pv,pv),(pv,pv))"));
}

}  // namespace
}  // namespace pagoda::grammar
