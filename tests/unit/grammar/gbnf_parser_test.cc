// Tests for parse_gbnf (src/grammar/gbnf_parser.h): each construct of llama.cpp's GBNF on strings it must accept
// and reject, the grammars shipped with llama.cpp, and errors that name what is wrong.
#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::matches;
using testing::with_bytes;

std::shared_ptr<const CompiledGrammar> gbnf(std::string_view text) {
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << text;
  if (!g.ok()) return nullptr;
  return with_bytes(std::move(g).value());
}

std::string gbnf_error(std::string_view text) {
  Result<Grammar> g = parse_gbnf(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : g.error();
}

TEST(GbnfParser, LiteralsAndAlternation) {
  auto g = gbnf(R"(root ::= "yes" | "no" | "maybe")");
  EXPECT_TRUE(matches(g, "yes"));
  EXPECT_TRUE(matches(g, "no"));
  EXPECT_TRUE(matches(g, "maybe"));
  EXPECT_FALSE(matches(g, "ye"));
  EXPECT_FALSE(matches(g, "yesno"));
  EXPECT_FALSE(matches(g, ""));
}

TEST(GbnfParser, RulesGroupsAndRepetition) {
  auto g = gbnf(R"(
# a list of numbers
root ::= "[" ( num ( "," num )* )? "]"
num  ::= [0-9]+
)");
  EXPECT_TRUE(matches(g, "[]"));
  EXPECT_TRUE(matches(g, "[1]"));
  EXPECT_TRUE(matches(g, "[12,3,456]"));
  EXPECT_FALSE(matches(g, "[1,]"));
  EXPECT_FALSE(matches(g, "[,1]"));
  EXPECT_FALSE(matches(g, "[a]"));
}

TEST(GbnfParser, CountedRepetition) {
  auto g = gbnf(R"(root ::= "a"{2} "b"{1,3} "c"{2,} "d"{0,2})");
  EXPECT_TRUE(matches(g, "aabcc"));
  EXPECT_TRUE(matches(g, "aabbbccccdd"));
  EXPECT_FALSE(matches(g, "abcc"));
  EXPECT_FALSE(matches(g, "aabbbbcc"));
  EXPECT_FALSE(matches(g, "aabc"));
  EXPECT_FALSE(matches(g, "aabccddd"));
  auto opt = gbnf(R"(root ::= "x"? "y"+ "z"*)");
  EXPECT_TRUE(matches(opt, "y"));
  EXPECT_TRUE(matches(opt, "xyyzzz"));
  EXPECT_FALSE(matches(opt, "xz"));
}

TEST(GbnfParser, CharacterClassesOverCodePoints) {
  auto g = gbnf(R"(root ::= [^\n"] [a-cx] [\x41-\x43] [ぁ-ゟ] .)");
  EXPECT_TRUE(matches(g, "zbBぃ!"));
  EXPECT_TRUE(matches(g, "éxAゟ€"));  // é is one code point (two bytes), € three
  EXPECT_FALSE(matches(g, "\nbBぃ!"));
  EXPECT_FALSE(matches(g, "\"bBぃ!"));
  EXPECT_FALSE(matches(g, "zdBぃ!"));
  EXPECT_FALSE(matches(g, "zbDぃ!"));
  EXPECT_FALSE(matches(g, "zbBa!"));
  // '.' is one code point: a lone continuation byte or a truncated sequence is not.
  EXPECT_FALSE(matches(g, "zbBぃ\x80"));
  EXPECT_FALSE(matches(g, "zbBぃ\xE2\x82"));
}

TEST(GbnfParser, Escapes) {
  auto g = gbnf(R"(root ::= "\t\r\n\\\"\x41\u00e9\U0001F600" [\[\]\-])");
  EXPECT_TRUE(matches(g, "\t\r\n\\\"Aé😀-"));
  EXPECT_TRUE(matches(g, "\t\r\n\\\"Aé😀]"));
  EXPECT_FALSE(matches(g, "\t\r\n\\\"Aé😀x"));
}

TEST(GbnfParser, NewlinesInsideParenthesesAndAfterBar) {
  auto g = gbnf("root ::= (\n  \"a\"\n  \"b\"\n) |\n  \"c\"\nother ::= \"d\"\n");
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "c"));
  EXPECT_FALSE(matches(g, "d"));
}

TEST(GbnfParser, RecursionThroughRules) {
  auto g = gbnf(R"gbnf(
root ::= expr
expr ::= term ("+" term)*
term ::= [0-9] | "(" expr ")"
)gbnf");
  EXPECT_TRUE(matches(g, "1+(2+(3+4))"));
  EXPECT_TRUE(matches(g, "((((1))))"));
  EXPECT_FALSE(matches(g, "((1)"));
  EXPECT_FALSE(matches(g, "1+"));
}

TEST(GbnfParser, LlamaCppJsonGrammar) {
  auto g = gbnf(R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)");
  EXPECT_TRUE(matches(g, R"({"a": [1, 2.5, -3e4], "b": {"c": null}, "d": "x\"\u00e9y"})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, R"({"a": })"));
  EXPECT_FALSE(matches(g, R"({"a": 1,})"));
  EXPECT_FALSE(matches(g, "[1]"));
}

TEST(GbnfParser, Errors) {
  EXPECT_NE(gbnf_error(R"(root ::= foo)").find("rule 'foo' is used but never defined"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(start ::= "a")").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "a)").find("unterminated string literal"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= [a-)").find("unterminated character class"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root = "a")").find("expecting '::='"), std::string::npos);
  EXPECT_NE(gbnf_error(R"gbnf(root ::= ("a")gbnf").find("expecting ')'"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= * "a")").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "a"{3,1})").find("below its minimum"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "a"{20000})").find("repetition count above"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "\q")").find("unknown escape"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "\x4")").find("hex digits"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= [z-a])").find("out of order"), std::string::npos);
  EXPECT_NE(gbnf_error("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= <[1000]>)").find("token references"), std::string::npos);
  EXPECT_NE(gbnf_error(R"gbnf(root ::= "a" ) "b")gbnf").find("line 1, column 14"), std::string::npos);
  EXPECT_NE(gbnf_error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"").find("left recursion"), std::string::npos);
  EXPECT_NE(gbnf_error("root ::= x? root \"a\" | \"b\"\nx ::= \"c\"").find("left recursion"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= "a" root)").find("matches no string"), std::string::npos);
  EXPECT_NE(gbnf_error(R"(root ::= [^\x00-\U0010FFFF])").find("matches no string"), std::string::npos);
}

TEST(GbnfParser, UnproductiveAlternativesArePruned) {
  auto g = gbnf("root ::= \"a\" | loop\nloop ::= \"b\" loop");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_FALSE(testing::is_prefix(g, "b"));
}

}  // namespace
}  // namespace pagoda::grammar
