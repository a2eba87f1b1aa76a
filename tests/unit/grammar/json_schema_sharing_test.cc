// Tests for the converter's sharing of repeated pieces (json_schema_converter.h): an array item counted by
// minItems/maxItems, an allOf of anyOf lists, and sub-schemas written the same in several places (annotations
// aside) each accept exactly the documents a validator accepts (schema_validator.h), enumerated over small domains;
// and the sharing keeps the automaton the size of one copy, not of every copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "array_enumeration.h"
#include "grammar/json_schema_converter.h"
#include "grammar_test_util.h"
#include "schema_validator.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::matches;

std::shared_ptr<const CompiledGrammar> compile_shared(const json& schema, const JsonGrammarOptions& options = {}) {
  Result<Grammar> g = json_schema_to_grammar(schema, options);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  if (!g.ok()) return nullptr;
  return testing::with_bytes(std::move(g).value());
}

// Every compact JSON array of up to `max_len` items out of `alphabet`: the grammar accepts it exactly when the
// validator does. Returns how many it accepted.
int32_t expect_arrays_exact(const json& schema, const std::vector<std::string>& alphabet, int32_t max_len) {
  auto g = compile_shared(schema);
  return g ? testing::expect_arrays_match_validator(g, schema, alphabet, max_len) : 0;
}

const json kPoint = {{"type", "object"},
                     {"properties", {{"x", {{"type", "integer"}}}, {"y", {{"type", "integer"}}}}},
                     {"required", {"x"}},
                     {"additionalProperties", false}};
const std::vector<std::string> kPointAlphabet = {R"({"x":1})", R"({"x":1,"y":2})", R"({"y":2})", R"({"x":"a"})", "1",
                                                 "[]"};

TEST(JsonSchemaSharing, CountedObjectItemsAcceptExactlyTheValidArrays) {
  for (const auto& [min, max] : std::vector<std::pair<int32_t, int32_t>>{{3, 5}, {4, -1}, {0, 3}, {2, 2}}) {
    json schema = {{"type", "array"}, {"items", kPoint}, {"minItems", min}};
    if (max >= 0) schema["maxItems"] = max;
    EXPECT_GT(expect_arrays_exact(schema, kPointAlphabet, 6), 0) << schema.dump();
  }
  // After a positional prefix: the rest counted from the prefix's end.
  const json prefixed = {
      {"type", "array"}, {"prefixItems", {{{"type", "string"}}}}, {"items", kPoint}, {"minItems", 4}, {"maxItems", 5}};
  std::vector<std::string> alphabet = kPointAlphabet;
  alphabet.push_back(R"("s")");
  EXPECT_GT(expect_arrays_exact(prefixed, alphabet, 6), 0);
}

// The automaton states of a schema's grammar.
size_t states_of(const json& schema) {
  Result<Grammar> g = json_schema_to_grammar(schema);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  return g.ok() ? g.value().states.size() : 0;
}

json eight_property_object() {
  json item = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"}) item["properties"][name] = {{"type", "string"}};
  return item;
}

TEST(JsonSchemaSharing, CountedItemsCostOneCopy) {
  auto array_of = [](uint32_t count) {
    return json{{"type", "array"}, {"items", eight_property_object()}, {"minItems", count}, {"maxItems", count}};
  };
  const size_t three = states_of(array_of(3)), five = states_of(array_of(5)), twenty = states_of(array_of(20));
  const size_t one_item = states_of(eight_property_object());
  std::printf("states: one item %zu, 3 items %zu, 5 items %zu, 20 items %zu\n", one_item, three, five, twenty);
  // More items cost their separators and calls, far less than more copies of the item.
  EXPECT_LT(five - three, one_item / 2);
  EXPECT_LT(twenty - three, 17 * one_item / 4);
  auto compiled = compile_shared(array_of(20));
  ASSERT_TRUE(compiled);
  std::string text = "[";
  for (int32_t i = 0; i < 20; ++i) text += std::string(i ? "," : "") + R"({"a":"x","h":"y"})";
  EXPECT_TRUE(matches(compiled, text + "]"));
  EXPECT_FALSE(matches(compiled, text + R"(,{"a":"x"}])"));
  EXPECT_FALSE(matches(compiled, text.substr(0, text.rfind(',')) + "]"));
  EXPECT_FALSE(matches(compiled, R"([{"a":1})" + text.substr(text.find(',')) + "]"));
}

// Every object over keys a, b, c, d (each absent or 1, in that order): accepted exactly when valid.
void expect_objects_exact(const json& schema, const JsonGrammarOptions& options = {}) {
  auto g = compile_shared(schema, options);
  ASSERT_TRUE(g);
  int32_t accepted = 0;
  for (int32_t set = 0; set < 16; ++set) {
    std::string text = "{";
    for (int32_t k = 0; k < 4; ++k) {
      if (!(set >> k & 1)) continue;
      text += std::string(text.size() > 1 ? "," : "") + "\"" + char('a' + k) + "\":1";
    }
    text += "}";
    const bool valid = testing::validate(schema, json::parse(text)).empty();
    EXPECT_EQ(matches(g, text), valid) << text << "\nschema " << schema.dump();
    accepted += valid;
  }
  EXPECT_GT(accepted, 0) << schema.dump();
  EXPECT_LT(accepted, 16) << schema.dump();
}

TEST(JsonSchemaSharing, AllOfOfAnyOfListsAcceptsExactlyTheValidObjects) {
  const json props = {{"a", {{"type", "integer"}}},
                      {"b", {{"type", "integer"}}},
                      {"c", {{"type", "integer"}}},
                      {"d", {{"type", "integer"}}}};
  const json schema = {{"type", "object"},
                       {"properties", props},
                       {"additionalProperties", false},
                       {"allOf",
                        {{{"anyOf", {{{"required", {"a"}}}, {{"required", {"b"}}}}}},
                         {{"anyOf", {{{"required", {"c"}}}, {{"required", {"d"}}}}}}}}};
  expect_objects_exact(schema);
  expect_objects_exact(schema, {.any_property_order = true});
  // Branches that refer to one shared definition.
  json with_refs = schema;
  with_refs["$defs"] = {{"needs_a", {{"required", {"a"}}}}};
  with_refs["allOf"][0]["anyOf"][0] = {{"$ref", "#/$defs/needs_a"}};
  with_refs["allOf"][1]["anyOf"][1] = {{"$ref", "#/$defs/needs_a"}};
  expect_objects_exact(with_refs);
}

TEST(JsonSchemaSharing, IdenticalSubSchemasShareOneRuleWithTheirOwnAnnotations) {
  // One object schema written under 30 properties, each with its own description, against 30 that differ in a
  // property name: the same ones cost about one copy.
  auto outer = [](bool same) {
    json schema = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
    for (int32_t i = 0; i < 30; ++i) {
      json copy = eight_property_object();
      copy["description"] = "copy " + std::to_string(i);
      if (!same) copy["properties"]["z" + std::to_string(i)] = {{"type", "string"}};
      schema["properties"]["k" + std::to_string(i)] = copy;
    }
    return schema;
  };
  const size_t same = states_of(outer(true)), different = states_of(outer(false));
  std::printf("states: 30 same copies %zu, 30 different ones %zu\n", same, different);
  EXPECT_LT(same * 3, different);
  // A property named like an annotation is part of the schema, not an annotation: this one differs.
  json schema = outer(true);
  json titled = eight_property_object();
  titled["properties"]["title"] = {{"type", "integer"}};
  schema["properties"]["titled"] = titled;
  auto compiled = compile_shared(schema);
  ASSERT_TRUE(compiled);
  EXPECT_TRUE(matches(compiled, R"({"k0":{"a":"1"},"k29":{"h":"2"},"titled":{"title":3}})"));
  EXPECT_FALSE(matches(compiled, R"({"k0":{"title":3}})"));
  EXPECT_FALSE(matches(compiled, R"({"k7":{"a":1}})"));
  EXPECT_FALSE(matches(compiled, R"({"titled":{"title":"x"}})"));
}

}  // namespace
}  // namespace pagoda::grammar
