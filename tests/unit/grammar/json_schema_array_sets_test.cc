// Tests for the converter's arrays that count their items' values (json_schema_converter.h): uniqueItems over a
// finite set of scalars (each value at most once, exhaustively over small domains, with minItems/maxItems) and
// contains with minContains/maxContains (matching items counted); random sentences that must validate
// (schema_validator.h); and the refusals, by name, of what neither can enforce.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "array_enumeration.h"
#include "grammar/json_schema_converter.h"
#include "grammar/random_sentence.h"
#include "grammar_test_util.h"
#include "schema_validator.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::matches;

std::shared_ptr<const CompiledGrammar> compile_sets(const json& schema) {
  Result<Grammar> g = json_schema_to_grammar(schema);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  if (!g.ok()) return nullptr;
  return testing::with_bytes(std::move(g).value());
}

std::string sets_error(const json& schema) {
  Result<Grammar> g = json_schema_to_grammar(schema);
  EXPECT_FALSE(g.ok()) << schema.dump();
  return g.ok() ? "" : g.error();
}

// Random sentences parse and validate; returns how many distinct texts came out.
size_t expect_set_outputs_valid(const json& schema, int32_t count = 120) {
  auto g = compile_sets(schema);
  EXPECT_TRUE(g);
  if (!g) return 0;
  std::mt19937_64 rng(7);
  std::set<std::string> texts;
  for (int32_t i = 0; i < count; ++i) {
    std::optional<std::string> text = random_sentence(g, rng, {.soft_max_bytes = 48, .hard_max_bytes = 20000});
    EXPECT_TRUE(text.has_value()) << schema.dump();
    if (!text) return texts.size();
    const json value = json::parse(*text, nullptr, false);
    EXPECT_FALSE(value.is_discarded()) << "not JSON: " << *text;
    EXPECT_EQ(testing::validate(schema, value), "") << *text << "\nschema " << schema.dump();
    texts.insert(*text);
  }
  return texts.size();
}

// Every array of up to `max_len` items over `alphabet` (JSON texts), compact: the grammar accepts it exactly when
// the validator does, and accepts some.
void expect_sets_exact(const json& schema, const std::vector<std::string>& alphabet, int32_t max_len) {
  auto g = compile_sets(schema);
  ASSERT_TRUE(g);
  EXPECT_GT(testing::expect_arrays_match_validator(g, schema, alphabet, max_len), 0) << schema.dump();
}

TEST(JsonSchemaArraySets, UniqueEnumItemsEachAtMostOnce) {
  const json schema = {{"type", "array"}, {"items", {{"enum", {"a", "b", "c"}}}}, {"uniqueItems", true}};
  expect_sets_exact(schema, {"\"a\"", "\"b\"", "\"c\"", "\"d\""}, 4);
  auto g = compile_sets(schema);
  EXPECT_TRUE(matches(g, R"([ "c", "a" ])"));
  EXPECT_TRUE(matches(g, "[\n  \"b\",\n  \"c\",\n  \"a\"\n]"));
  EXPECT_FALSE(matches(g, R"(["a", "b", "a"])"));
  EXPECT_GT(expect_set_outputs_valid(schema), 8u);
}

TEST(JsonSchemaArraySets, UniqueWithCountsTypesAndEqualNumbers) {
  // minItems/maxItems count the distinct values chosen.
  const json counted = {{"type", "array"},
                        {"items", {{"type", "integer"}, {"enum", {1, 2, 3, 4, "x"}}}},
                        {"uniqueItems", true},
                        {"minItems", 2},
                        {"maxItems", 3}};
  expect_sets_exact(counted, {"1", "2", "3", "4", "\"x\""}, 4);
  expect_set_outputs_valid(counted);
  // 1 and 1.0 are one value to JSON Schema: listed twice, it may still appear once.
  auto numbers = compile_sets({{"type", "array"}, {"items", {{"enum", {1, 1.0, 2}}}}, {"uniqueItems", true}});
  EXPECT_TRUE(matches(numbers, "[2,1]"));
  EXPECT_FALSE(matches(numbers, "[1,1]"));
  EXPECT_FALSE(matches(numbers, "[1,1.0]"));
  // Booleans and null: their types are finite sets.
  const json flags = {{"type", "array"}, {"items", {{"type", {"boolean", "null"}}}}, {"uniqueItems", true}};
  expect_sets_exact(flags, {"true", "false", "null", "0"}, 4);
  // Through a $ref and a const.
  const json referenced = {{"$defs", {{"color", {{"enum", {"red", "green"}}}}}},
                           {"type", "array"},
                           {"items", {{"$ref", "#/$defs/color"}}},
                           {"uniqueItems", true}};
  expect_sets_exact(referenced, {"\"red\"", "\"green\"", "\"blue\""}, 3);
  auto one = compile_sets({{"type", "array"}, {"items", {{"const", "k"}}}, {"uniqueItems", true}});
  EXPECT_TRUE(matches(one, R"(["k"])"));
  EXPECT_FALSE(matches(one, R"(["k","k"])"));
  // More items asked for than values exist: no array.
  EXPECT_NE(sets_error({{"type", "array"}, {"items", {{"enum", {1, 2}}}}, {"uniqueItems", true}, {"minItems", 3}})
                .find("matches no string"),
            std::string::npos);
}

TEST(JsonSchemaArraySets, UniqueRefusedByNameElsewhere) {
  for (const json& items : {json(true), json{{"type", "string"}}, json{{"enum", {json::array({1}), 2}}},
                            json{{"anyOf", {{{"const", 1}}, {{"const", 2}}}}}}) {
    const std::string e = sets_error({{"type", "array"}, {"items", items}, {"uniqueItems", true}});
    EXPECT_NE(e.find("'uniqueItems' is supported only for items of a few listed scalars"), std::string::npos)
        << items.dump() << ": " << e;
  }
  EXPECT_NE(sets_error({{"type", "array"}, {"prefixItems", {{{"const", 1}}}}, {"uniqueItems", true}})
                .find("'uniqueItems' beside 'prefixItems'"),
            std::string::npos);
  json many = json::array();
  for (int32_t i = 0; i < 20; ++i) many.push_back(i);
  EXPECT_NE(sets_error({{"type", "array"}, {"items", {{"enum", many}}}, {"uniqueItems", true}}).find("budget"),
            std::string::npos);
  // With few items allowed, the sets stay few: 20 values, at most 2 of them.
  auto two = compile_sets({{"type", "array"}, {"items", {{"enum", many}}}, {"uniqueItems", true}, {"maxItems", 2}});
  EXPECT_TRUE(matches(two, "[19,3]"));
  EXPECT_FALSE(matches(two, "[3,3]"));
  EXPECT_FALSE(matches(two, "[1,2,3]"));
}

TEST(JsonSchemaArraySets, ContainsCountsMatchingItems) {
  const json schema = {{"type", "array"}, {"items", {{"type", "integer"}}}, {"contains", {{"minimum", 5}}}};
  expect_sets_exact(schema, {"1", "7", "\"s\""}, 4);
  EXPECT_GT(expect_set_outputs_valid(schema), 8u);
  const json bounded = {{"type", "array"},
                        {"contains", {{"const", "x"}}},
                        {"minContains", 2},
                        {"maxContains", 3},
                        {"items", {{"type", "string"}}}};
  expect_sets_exact(bounded, {"\"x\"", "\"y\"", "1"}, 5);
  expect_set_outputs_valid(bounded);
  // minContains 0: any array of the items, however many match (up to maxContains).
  const json optional = {{"type", "array"}, {"contains", {{"type", "null"}}}, {"minContains", 0}, {"maxContains", 1}};
  expect_sets_exact(optional, {"null", "1", "true"}, 3);
  // minItems up to minContains holds by itself.
  expect_sets_exact({{"type", "array"}, {"contains", {{"type", "string"}}}, {"minItems", 1}}, {"\"a\"", "2"}, 3);
  // Without items: every other value of any type.
  auto any = compile_sets({{"contains", {{"type", "string"}, {"pattern", "^a"}}}});
  EXPECT_TRUE(matches(any, R"([1,{"k":[2]},"ab"])"));
  EXPECT_FALSE(matches(any, R"([1,"ba"])"));
  EXPECT_FALSE(matches(any, "[]"));
  // minContains/maxContains without contains assert nothing.
  auto plain = compile_sets({{"type", "array"}, {"maxContains", 0}});
  EXPECT_TRUE(matches(plain, "[1,2]"));
}

TEST(JsonSchemaArraySets, ContainsRefusedByNameElsewhere) {
  // The items that do not match need the complement of contains: integer has none (1.5 is no integer).
  EXPECT_NE(sets_error({{"type", "array"}, {"contains", {{"type", "integer"}}}})
                .find("schema at #: 'contains' is supported where its complement is expressible"),
            std::string::npos);
  EXPECT_NE(sets_error({{"type", "array"}, {"contains", {{"const", 1}}}, {"maxItems", 3}})
                .find("'contains' beside 'maxItems'"),
            std::string::npos);
  EXPECT_NE(sets_error({{"type", "array"}, {"contains", {{"const", 1}}}, {"minItems", 2}})
                .find("'minItems' above 'minContains'"),
            std::string::npos);
  EXPECT_NE(sets_error({{"type", "array"}, {"contains", {{"const", 1}}}, {"prefixItems", {true}}})
                .find("'contains' beside 'prefixItems'"),
            std::string::npos);
  EXPECT_NE(sets_error({{"type", "array"}, {"contains", {{"const", 1}}}, {"uniqueItems", true}})
                .find("'contains' beside 'uniqueItems'"),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda::grammar
