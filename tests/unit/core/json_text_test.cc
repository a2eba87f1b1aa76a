// parse_untrusted_json: invalid text and deep nesting are errors (never exceptions), and the depth scan skips
// brackets inside strings; json_excerpt shortens and never throws on invalid UTF-8.
#include "core/json_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace pagoda {
namespace {

using ::testing::HasSubstr;

TEST(JsonTextTest, ParsesValidTextAndNamesWhereInvalidTextFails) {
  Result<nlohmann::json> ok = parse_untrusted_json(R"({"a": [1, {"b": "x"}]})");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ((*ok)["a"][1]["b"], "x");
  Result<nlohmann::json> bad = parse_untrusted_json("{\"a\": ");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("invalid JSON: parse error at line 1, column 7"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(parse_untrusted_json("").ok());
  EXPECT_FALSE(parse_untrusted_json("\"\xff\"").ok());  // invalid UTF-8 inside a string
}

TEST(JsonTextTest, DeepNestingIsRefusedBeforeParsing) {
  // 100,000 levels parse fine in nlohmann (its parser keeps its own stack), then overflow the call stack in the
  // first recursive copy, comparison or dump.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Result<nlohmann::json> r = parse_untrusted_json(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("JSON nested deeper than 64 levels"));
  EXPECT_TRUE(parse_untrusted_json(std::string(64, '[') + std::string(64, ']')).ok());
  EXPECT_FALSE(parse_untrusted_json(std::string(65, '[') + std::string(65, ']')).ok());
  EXPECT_TRUE(parse_untrusted_json(R"({"a":{"b":{"c":[]}}})", 4).ok());
  EXPECT_FALSE(parse_untrusted_json(R"({"a":{"b":{"c":[]}}})", 3).ok());
}

TEST(JsonTextTest, BracketsInsideStringsDoNotCount) {
  EXPECT_FALSE(json_nesting_exceeds(R"(["[[[[", "\"[[[[", "{{{{\\"])", 1));
  EXPECT_TRUE(json_nesting_exceeds(R"([["]"]])", 1));
  const std::string escaped_quote = std::string("[\"\\\"") + std::string(100, '[') + "\"]";
  EXPECT_FALSE(json_nesting_exceeds(escaped_quote, 1));
  EXPECT_TRUE(parse_untrusted_json(escaped_quote, 1).ok());
}

TEST(JsonTextTest, ExcerptsAreShortAndTolerateInvalidUtf8) {
  EXPECT_EQ(json_excerpt(nlohmann::json{1, 2}), "[1,2]");
  EXPECT_EQ(json_excerpt(nlohmann::json(std::string(200, 'a')), 10), "\"aaaaaaaaa...");
  EXPECT_EQ(json_excerpt(nlohmann::json("\xff")), "\"\xef\xbf\xbd\"");  // U+FFFD, not a type_error exception
  // A cut never splits a UTF-8 character.
  EXPECT_EQ(json_excerpt(nlohmann::json("\xc3\xa9\xc3\xa9"), 4), "\"\xc3\xa9...");
}

}  // namespace
}  // namespace pagoda
