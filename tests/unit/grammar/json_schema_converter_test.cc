// Tests for json_schema_to_grammar (src/grammar/json_schema_converter.h): for each supported keyword, strings the
// grammar must accept and reject, and random sentences of the grammar that must parse as JSON and validate
// (schema_validator.h, written independently); integer ranges checked exhaustively around their bounds; errors
// naming each unsupported keyword and its location.
#include "grammar/json_schema_converter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar/random_sentence.h"
#include "grammar_test_util.h"
#include "schema_validator.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::matches;

std::shared_ptr<const CompiledGrammar> compile_schema(const json& schema, JsonGrammarOptions options = {}) {
  Result<Grammar> g = json_schema_to_grammar(schema, options);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  if (!g.ok()) return nullptr;
  return testing::with_bytes(std::move(g).value());
}

std::string schema_error(const json& schema) {
  Result<Grammar> g = json_schema_to_grammar(schema);
  EXPECT_FALSE(g.ok()) << schema.dump();
  return g.ok() ? "" : g.error();
}

// Random sentences must be JSON texts valid under the schema.
void expect_generated_valid(const json& schema, int32_t count = 60, uint64_t seed = 1) {
  auto g = compile_schema(schema);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(seed);
  for (int32_t i = 0; i < count; ++i) {
    std::optional<std::string> text = random_sentence(g, rng, {.soft_max_bytes = 48, .hard_max_bytes = 20000});
    ASSERT_TRUE(text.has_value()) << schema.dump();
    const json value = json::parse(*text, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << "not JSON: " << *text << "\nschema " << schema.dump();
    EXPECT_EQ(testing::validate(schema, value), "") << *text << "\nschema " << schema.dump();
  }
}

TEST(JsonSchemaConverter, PrimitiveTypes) {
  auto s = compile_schema({{"type", "string"}});
  EXPECT_TRUE(matches(s, R"("hi")"));
  EXPECT_TRUE(matches(s, R"("a\"b\\c\n\u00e9\ud83d\ude00\/")"));
  EXPECT_TRUE(matches(s, "\"é😀\""));
  EXPECT_FALSE(matches(s, "\"a\nb\""));     // raw control character
  EXPECT_FALSE(matches(s, R"("\ud800")"));  // lone surrogate
  EXPECT_FALSE(matches(s, R"("\x")"));
  EXPECT_FALSE(matches(s, "1"));
  auto i = compile_schema({{"type", "integer"}});
  // Unbounded: up to 19 digits, a 64-bit integer's (MaskBench's documents carry 18-digit ids).
  for (const char* ok : {"0", "-1", "42", "999999999999999", "234567890123456789", "-9223372036854775807"})
    EXPECT_TRUE(matches(i, ok)) << ok;
  for (const char* bad : {"-0", "01", "1.5", "1e3", "99999999999999999999", "+1", ""})
    EXPECT_FALSE(matches(i, bad)) << bad;
  auto n = compile_schema({{"type", "number"}});
  for (const char* ok : {"0", "-0", "1.5", "-0.25", "1e10", "2.5E-3", "7", "234567890123456789"})
    EXPECT_TRUE(matches(n, ok)) << ok;
  for (const char* bad : {"01", ".5", "1.", "1e", "--1", "NaN"}) EXPECT_FALSE(matches(n, bad)) << bad;
  auto b = compile_schema({{"type", "boolean"}});
  EXPECT_TRUE(matches(b, "true"));
  EXPECT_TRUE(matches(b, "false"));
  EXPECT_FALSE(matches(b, "null"));
  auto z = compile_schema({{"type", "null"}});
  EXPECT_TRUE(matches(z, "null"));
  auto multi = compile_schema({{"type", {"string", "null"}}});
  EXPECT_TRUE(matches(multi, "null"));
  EXPECT_TRUE(matches(multi, "\"x\""));
  EXPECT_FALSE(matches(multi, "1"));
  expect_generated_valid({{"type", {"integer", "boolean", "null", "string", "number"}}});
}

TEST(JsonSchemaConverter, ObjectsInPropertyOrderWithOptionalMembers) {
  const json schema = {
      {"type", "object"},
      {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}, {"c", {{"type", "boolean"}}}}},
      {"required", {"b"}}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, R"({"b":"x"})"));
  EXPECT_TRUE(matches(g, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(matches(g, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(matches(g, R"({"b":"x","c":false})"));
  EXPECT_TRUE(matches(g, "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"));
  EXPECT_TRUE(matches(g, R"({ "b" : "x" })"));
  EXPECT_FALSE(matches(g, R"({"a":1})"));          // b is required
  EXPECT_FALSE(matches(g, R"({"b":"x","a":1})"));  // order of `properties`
  EXPECT_TRUE(matches(g, R"({"b":"x","d":1})"));   // additionalProperties absent: other properties allowed
  EXPECT_FALSE(matches(g, R"({"d":1,"b":"x"})"));  // after the listed ones
  EXPECT_FALSE(matches(g, R"({"b":"x",})"));
  EXPECT_FALSE(matches(g, R"({,"b":"x"})"));
  EXPECT_FALSE(matches(g, R"( {"b":"x"})"));    // nothing before the document
  EXPECT_FALSE(matches(g, R"({"b":"x"} )"));    // nor after it
  EXPECT_FALSE(matches(g, "{\"b\":  \"x\"}"));  // at most one space
  expect_generated_valid(schema);
  auto empty = compile_schema({{"type", "object"}, {"properties", {{"a", {{"type", "null"}}}}}});
  EXPECT_TRUE(matches(empty, "{}"));
  EXPECT_TRUE(matches(empty, "{ }"));
  EXPECT_TRUE(matches(empty, R"({"a":null})"));
}

TEST(JsonSchemaConverter, BoundedWhitespace) {
  const json schema = {{"type", "array"}, {"items", {{"type", "integer"}}}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, "[\n" + std::string(20, ' ') + "1\n]"));
  EXPECT_FALSE(matches(g, "[\n" + std::string(21, ' ') + "1\n]"));
  EXPECT_FALSE(matches(g, "[\n\n1]"));
  auto compact = compile_schema(schema, {.allow_whitespace = false});
  EXPECT_TRUE(matches(compact, "[1,2]"));
  EXPECT_FALSE(matches(compact, "[1, 2]"));
}

TEST(JsonSchemaConverter, AdditionalProperties) {
  const json typed = {{"type", "object"},
                      {"properties", {{"a", {{"type", "string"}}}}},
                      {"additionalProperties", {{"type", "integer"}}}};
  auto g = compile_schema(typed);
  EXPECT_TRUE(matches(g, R"({"a":"x","b":1,"cc":2})"));
  EXPECT_TRUE(matches(g, R"({"b":1})"));
  EXPECT_TRUE(matches(g, R"({"ab":1})"));
  EXPECT_TRUE(matches(g, R"({"":1})"));
  EXPECT_FALSE(matches(g, R"({"a":1})"));  // "a" is declared: a string, not an extra integer
  EXPECT_FALSE(matches(g, R"({"b":"x"})"));
  EXPECT_FALSE(matches(g, R"({"\u0061":1})"));  // "a" spelled with an escape is still "a"
  expect_generated_valid(typed);
  const json open = {{"type", "object"}, {"additionalProperties", true}, {"required", {"id"}}};
  auto o = compile_schema(open);
  EXPECT_TRUE(matches(o, R"({"id":[1,{"x":null}],"z":"w"})"));
  EXPECT_FALSE(matches(o, R"({"z":"w"})"));
  expect_generated_valid(open);
  EXPECT_NE(schema_error({{"type", "object"}, {"required", {"id"}}, {"additionalProperties", false}})
                .find("required property 'id'"),
            std::string::npos);
  // Without additionalProperties, a required property outside `properties` may hold any value.
  const json undeclared = {{"type", "object"}, {"properties", {{"a", {{"type", "null"}}}}}, {"required", {"b"}}};
  auto u = compile_schema(undeclared);
  EXPECT_TRUE(matches(u, R"({"a":null,"b":[1]})"));
  EXPECT_TRUE(matches(u, R"({"b":"x"})"));
  EXPECT_FALSE(matches(u, R"({"a":null})"));
  expect_generated_valid(undeclared);
}

// An open object's extra names (every name but the listed ones) cost about a state per character of the listed
// names: leaving the names' trie anywhere leads to one shared rest of the name, not a copy of it per trie node.
TEST(JsonSchemaConverter, ExtraNamesGrowWithTheListedNamesOnly) {
  json props = json::object();
  for (int32_t i = 0; i < 40; ++i) props[fmt::format("property_{}_with_a_rather_long_name", i)] = {{"type", "boolean"}};
  const json schema = {{"type", "object"}, {"properties", props}};
  JsonGrammarOptions any_order;  // as MaskBench compiles: the listed names join the extra ones, in any order
  any_order.any_property_order = true;
  Result<Grammar> g = json_schema_to_grammar(schema, any_order);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LT(g->states.size(), 8000u);  // not a copy of the rest of a name per trie node
  auto cg = testing::with_bytes(std::move(g).value());
  EXPECT_TRUE(matches(cg, R"({"property_1_with_a_rather_long_name":true})"));
  EXPECT_TRUE(matches(cg, R"({"property_1_with_a_rather_long_nam":[1]})"));     // a listed name's prefix
  EXPECT_TRUE(matches(cg, R"({"property_1_with_a_rather_long_namee":"x"})"));  // and extension
  EXPECT_TRUE(matches(cg, R"({"property_7_with_é":null})"));                    // left by a character no name uses
  EXPECT_TRUE(matches(cg, R"({"property_7_wit_":null})"));                      // and by one other names use
  EXPECT_TRUE(matches(cg, R"({"":1,"\"":2})"));
  EXPECT_FALSE(matches(cg, R"({"property_1_with_a_rather_long_name":1})"));  // a listed name keeps its schema
  EXPECT_FALSE(matches(cg, R"({"property_1_with_a_rather_lon\u0067_name":1})"));  // however it is spelled
  expect_generated_valid(schema);
}

// Each distinct string or number constraint is one rule, called by every property that has it: twenty strings of at
// most 200 characters cost about one such string's states, not twenty.
TEST(JsonSchemaConverter, RepeatedStringAndNumberConstraintsShareOneRule) {
  json props = json::object();
  for (int32_t i = 0; i < 20; ++i) {
    props[fmt::format("s{}", i)] = {{"type", "string"}, {"maxLength", 200}};
    props[fmt::format("n{}", i)] = {{"type", "integer"}, {"minimum", 0}, {"maximum", 32767}};
  }
  props["other"] = {{"type", "string"}, {"maxLength", 3}};
  const json schema = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  Result<Grammar> g = json_schema_to_grammar(schema);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LT(g->states.size(), 15000u);  // not one copy per property
  auto cg = testing::with_bytes(std::move(g).value());
  const std::string a200(200, 'a');
  EXPECT_TRUE(matches(cg, fmt::format(R"({{"s0":"{}","n0":32767,"s1":"","n1":0,"other":"abc"}})", a200)));
  EXPECT_TRUE(matches(cg, fmt::format(R"({{"s19":"{}","n19":5}})", a200)));
  EXPECT_FALSE(matches(cg, fmt::format(R"({{"s0":"{}a"}})", a200)));
  EXPECT_FALSE(matches(cg, R"({"n0":32768})"));
  EXPECT_FALSE(matches(cg, R"({"n3":-1})"));
  EXPECT_FALSE(matches(cg, R"({"other":"abcd"})"));  // its own constraint, not the 200-character one
  expect_generated_valid(schema);
}

// additionalProperties absent allows any other property, as JSON Schema says; closed_objects (OpenAI's strict
// mode, forced tool calls) allows only the listed ones.
TEST(JsonSchemaConverter, AbsentAdditionalPropertiesAllowsAnyUnlessObjectsAreClosed) {
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}}},
                       {"required", {"a"}}};
  auto open = compile_schema(schema);
  EXPECT_TRUE(matches(open, R"({"a":1})"));
  EXPECT_TRUE(matches(open, R"({"a":1,"z":[1,{"k":null}],"y":"w"})"));
  EXPECT_TRUE(matches(open, R"({"a":1, "b":"x", "z":true})"));
  EXPECT_FALSE(matches(open, R"({"a":1,"b":2})"));  // a listed property keeps its schema
  EXPECT_FALSE(matches(open, R"({"a":1,"a":2})"));  // and is not an extra one
  EXPECT_FALSE(matches(open, R"({"z":true})"));     // required still required
  expect_generated_valid(schema);
  auto empty = compile_schema({{"type", "object"}});
  EXPECT_TRUE(matches(empty, R"({"anything":{"x":[1,2]}})"));
  JsonGrammarOptions closed;
  closed.closed_objects = true;
  auto c = compile_schema(schema, closed);
  EXPECT_TRUE(matches(c, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(matches(c, R"({"a":1,"z":true})"));
  auto closed_empty = compile_schema({{"type", "object"}}, closed);
  EXPECT_TRUE(matches(closed_empty, "{}"));
  EXPECT_FALSE(matches(closed_empty, R"({"x":1})"));
}

TEST(JsonSchemaConverter, EnumAndConst) {
  const json schema = {{"enum", {"red", 1, 2.5, nullptr, true, json::array({1, "a"}), json{{"k", "v"}}, "é\"\n"}}};
  auto g = compile_schema(schema);
  for (const char* ok : {R"("red")", "1", "2.5", "null", "true", R"([1,"a"])", R"({"k":"v"})", R"("é\"\n")"}) {
    EXPECT_TRUE(matches(g, ok)) << ok;
  }
  EXPECT_FALSE(matches(g, R"("blue")"));
  EXPECT_FALSE(matches(g, "false"));
  EXPECT_TRUE(matches(g, R"({"k": "v"})"));  // whitespace inside a listed value, as Python's json.dumps writes it
  EXPECT_TRUE(matches(g, R"([1, "a"])"));
  EXPECT_FALSE(matches(g, R"([1,"a",2])"));
  expect_generated_valid(schema);
  auto c = compile_schema({{"const", "fixed"}});
  EXPECT_TRUE(matches(c, R"("fixed")"));
  EXPECT_FALSE(matches(c, R"("fixe")"));
  auto typed = compile_schema({{"type", "string"}, {"enum", {"a", 1, "b"}}});  // the type filters the values
  EXPECT_TRUE(matches(typed, R"("b")"));
  EXPECT_FALSE(matches(typed, "1"));
  EXPECT_NE(schema_error({{"type", "string"}, {"enum", {1, 2}}}).find("matches no string"), std::string::npos);
  auto patterned = compile_schema({{"enum", {"ab", "b", 3}}, {"pattern", "a"}});  // the pattern filters strings
  EXPECT_TRUE(matches(patterned, R"("ab")"));
  EXPECT_TRUE(matches(patterned, "3"));
  EXPECT_FALSE(matches(patterned, R"("b")"));
  EXPECT_NE(schema_error({{"enum", {json::object()}}, {"required", {"a"}}}).find("'required'"), std::string::npos);
}

TEST(JsonSchemaConverter, Arrays) {
  const json items = {{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 2}, {"maxItems", 4}};
  auto g = compile_schema(items);
  EXPECT_TRUE(matches(g, "[1,2]"));
  EXPECT_TRUE(matches(g, "[1, 2, 3, 4]"));
  EXPECT_FALSE(matches(g, "[1]"));
  EXPECT_FALSE(matches(g, "[1,2,3,4,5]"));
  EXPECT_FALSE(matches(g, "[1,\"a\"]"));
  expect_generated_valid(items);
  const json tuple = {{"type", "array"},
                      {"prefixItems", {{{"type", "string"}}, {{"type", "integer"}}}},
                      {"items", {{"type", "boolean"}}},
                      {"minItems", 1}};
  auto t = compile_schema(tuple);
  EXPECT_TRUE(matches(t, R"(["a"])"));
  EXPECT_TRUE(matches(t, R"(["a",1,true,false])"));
  EXPECT_FALSE(matches(t, "[]"));
  EXPECT_FALSE(matches(t, R"(["a",true])"));
  expect_generated_valid(tuple);
  // Draft-04..2019 spelling: items as an array, additionalItems for the rest.
  const json old = {
      {"type", "array"}, {"items", {{{"type", "null"}}, {{"type", "boolean"}}}}, {"additionalItems", false}};
  auto o = compile_schema(old);
  EXPECT_TRUE(matches(o, "[null,true]"));
  EXPECT_TRUE(matches(o, "[null]"));
  EXPECT_TRUE(matches(o, "[]"));
  EXPECT_FALSE(matches(o, "[null,true,1]"));
  expect_generated_valid(old);
  auto any = compile_schema({{"type", "array"}});
  EXPECT_TRUE(matches(any, R"([1,"a",{"b":[null]}])"));
  auto capped = compile_schema(
      {{"type", "array"}, {"prefixItems", {{{"type", "integer"}}, {{"type", "integer"}}}}, {"maxItems", 1}});
  EXPECT_TRUE(matches(capped, "[1]"));
  EXPECT_FALSE(matches(capped, "[1,2]"));
  EXPECT_NE(schema_error({{"type", "array"}, {"uniqueItems", true}}).find("uniqueItems"), std::string::npos);
  auto unique_one = compile_schema({{"type", "array"}, {"uniqueItems", true}, {"maxItems", 1}});
  EXPECT_TRUE(matches(unique_one, "[1]"));
}

TEST(JsonSchemaConverter, StringLengthsCountCharacters) {
  const json schema = {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, R"("ab")"));
  EXPECT_TRUE(matches(g, "\"é😀x\""));     // three characters, eight bytes
  EXPECT_TRUE(matches(g, R"("\n\"x")"));  // escapes are one character each
  EXPECT_FALSE(matches(g, R"("a")"));
  EXPECT_FALSE(matches(g, R"("abcd")"));
  expect_generated_valid(schema);
}

TEST(JsonSchemaConverter, Patterns) {
  const json schema = {{"type", "string"}, {"pattern", "^[A-Z]{2}-\\d{3}$"}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, R"("AB-123")"));
  EXPECT_FALSE(matches(g, R"("AB-12")"));
  EXPECT_FALSE(matches(g, R"("xAB-123")"));
  expect_generated_valid(schema);
  const json search = {{"type", "string"}, {"pattern", "o+b"}};  // unanchored: contains a match
  auto s = compile_schema(search);
  EXPECT_TRUE(matches(s, R"("foobar")"));
  EXPECT_FALSE(matches(s, R"("fbar")"));
  expect_generated_valid(search);
  EXPECT_NE(
      schema_error({{"type", "string"}, {"pattern", "(a)\\1"}}).find("schema at #: regex /(a)\\1/: backreferences"),
      std::string::npos);
}

TEST(JsonSchemaConverter, Formats) {
  for (const char* format : {"date", "time", "date-time", "uuid", "email", "uri", "ipv4", "hostname"}) {
    expect_generated_valid({{"type", "string"}, {"format", format}}, 80);
  }
  auto date = compile_schema({{"type", "string"}, {"format", "date"}});
  EXPECT_TRUE(matches(date, R"("2024-02-29")"));
  EXPECT_TRUE(matches(date, R"("2000-02-29")"));
  EXPECT_FALSE(matches(date, R"("2023-02-29")"));
  EXPECT_FALSE(matches(date, R"("1900-02-29")"));
  EXPECT_FALSE(matches(date, R"("2024-04-31")"));
  EXPECT_FALSE(matches(date, R"("2024-13-01")"));
  auto dt = compile_schema({{"type", "string"}, {"format", "date-time"}});
  EXPECT_TRUE(matches(dt, R"("2024-06-01T12:30:00Z")"));
  EXPECT_TRUE(matches(dt, R"("2024-06-01T23:59:59.123+05:30")"));
  EXPECT_FALSE(matches(dt, R"("2024-06-01T24:00:00Z")"));
  EXPECT_FALSE(matches(dt, R"("2024-06-01 12:30:00Z")"));
  auto uuid = compile_schema({{"type", "string"}, {"format", "uuid"}});
  EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(uuid, R"("123e4567e89b12d3a456426614174000")"));
  auto email = compile_schema({{"type", "string"}, {"format", "email"}});
  EXPECT_TRUE(matches(email, R"("john.doe@example.com")"));
  EXPECT_FALSE(matches(email, R"("john..doe@example.com")"));
  EXPECT_FALSE(matches(email, R"("john@localhost")"));
  auto ip = compile_schema({{"type", "string"}, {"format", "ipv4"}});
  EXPECT_TRUE(matches(ip, R"("192.168.0.255")"));
  EXPECT_FALSE(matches(ip, R"("256.1.1.1")"));
  EXPECT_FALSE(matches(ip, R"("01.1.1.1")"));
  EXPECT_NE(schema_error({{"type", "string"}, {"format", "iri"}}).find("format 'iri' is not supported"),
            std::string::npos);
}

// IDNA's reserved labels ("--" in the 3rd and 4th places: xn-- A-labels among them) are left out: telling a valid
// punycode label from an invalid one needs a decoder, not a pattern.
TEST(JsonSchemaConverter, HostnamesLeaveOutReservedLabels) {
  auto host = compile_schema({{"type", "string"}, {"format", "hostname"}});
  // a--b: "-" in its 2nd and 3rd places, which IDNA leaves alone.
  for (const char* ok : {R"("example.com")", R"("a-b.c")", R"("ab-c")", R"("a")", R"("a--b")"})
    EXPECT_TRUE(matches(host, ok)) << ok;
  for (const char* reserved : {R"("xn--ihqwcrb4cv8a8dqg056pqjye")", R"("XN--aa---o47jg78q")", R"("ab--c.com")"})
    EXPECT_FALSE(matches(host, reserved)) << reserved;
}

// allOf: a member's positional items and the items after them hold for that member alone (JSON Schema 2020-12's
// "items does not look in applicators"), in both spellings.
TEST(JsonSchemaConverter, AllOfKeepsEachMembersItemPositions) {
  const json prefix_in_member = json::parse(R"({"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}})");
  auto g = compile_schema(prefix_in_member);
  EXPECT_TRUE(matches(g, "[5,6]"));
  EXPECT_FALSE(matches(g, "[3,5]")) << "items applies to every item of the outer schema";
  EXPECT_FALSE(matches(g, "[4]"));
  expect_generated_valid(prefix_in_member);
  const json draft4 =
      json::parse(R"({"allOf": [{"items": [{"type": "integer"}], "additionalItems": false}, {"items": {"maximum": 3}}]})");
  auto d = compile_schema(draft4);
  EXPECT_TRUE(matches(d, "[2]"));
  EXPECT_TRUE(matches(d, "[]"));
  EXPECT_FALSE(matches(d, "[4]"));
  EXPECT_FALSE(matches(d, "[1,2]")) << "the first member allows one item";
  expect_generated_valid(draft4);
}

// Every integer in [-1200, 1200] is accepted exactly when it satisfies the bounds.
void expect_integer_bounds(const json& extra) {
  json schema = {{"type", "integer"}};
  schema.update(extra);
  auto g = compile_schema(schema);
  ASSERT_TRUE(g);
  for (int32_t v = -1200; v <= 1200; ++v) {
    const bool valid = testing::validate(schema, json(v)).empty();
    ASSERT_EQ(matches(g, std::to_string(v)), valid) << v << " under " << schema.dump();
  }
}

TEST(JsonSchemaConverter, IntegerRangesAreExact) {
  expect_integer_bounds({{"minimum", 0}});
  expect_integer_bounds({{"maximum", 0}});
  expect_integer_bounds({{"minimum", -37}, {"maximum", 999}});
  expect_integer_bounds({{"minimum", 100}, {"maximum", 1099}});
  expect_integer_bounds({{"exclusiveMinimum", -10}, {"exclusiveMaximum", 10}});
  expect_integer_bounds({{"minimum", -1000}, {"maximum", -1}});
  expect_integer_bounds({{"minimum", 7}, {"maximum", 7}});
  expect_integer_bounds({{"minimum", 0.5}, {"maximum", 20.5}});                         // rounded inward
  expect_integer_bounds({{"minimum", 5}, {"exclusiveMinimum", true}, {"maximum", 9}});  // draft-04
  expect_integer_bounds({{"maximum", 5}, {"exclusiveMaximum", true}});                  // draft-04
  EXPECT_NE(schema_error({{"type", "integer"}, {"minimum", 5}, {"maximum", 4}}).find("matches no string"),
            std::string::npos);
}

TEST(JsonSchemaConverter, NumberBounds) {
  const json schema = {{"type", "number"}, {"minimum", 0}, {"exclusiveMaximum", 1}};
  auto g = compile_schema(schema);
  for (const char* ok : {"0", "0.0", "0.5", "0.999"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"1", "1.0", "-0.5", "-0", "1e-3", "2"}) EXPECT_FALSE(matches(g, bad)) << bad;
  expect_generated_valid(schema);
  const json around = {{"type", "number"}, {"exclusiveMinimum", -3}, {"maximum", 3}};
  auto a = compile_schema(around);
  for (const char* ok : {"-2.99", "3", "3.000", "0", "-2"}) EXPECT_TRUE(matches(a, ok)) << ok;
  for (const char* bad : {"-3", "-3.0", "3.5", "3.01", "-3.5"}) EXPECT_FALSE(matches(a, bad)) << bad;
  expect_generated_valid(around);
  expect_generated_valid({{"type", "number"}, {"minimum", 10}});
  expect_generated_valid({{"type", "number"}, {"maximum", -10}, {"exclusiveMaximum", true}});
  // Decimal bounds, exactly.
  const json decimal = {{"type", "number"}, {"minimum", 0.25}, {"exclusiveMaximum", 0.75}};
  auto d = compile_schema(decimal);
  for (const char* ok : {"0.25", "0.250", "0.5", "0.7499", "0.26"}) EXPECT_TRUE(matches(d, ok)) << ok;
  for (const char* bad : {"0.2499", "0.75", "0.750", "0.8", "0", "1"}) EXPECT_FALSE(matches(d, bad)) << bad;
  expect_generated_valid(decimal);
  const json negative = {{"type", "number"}, {"exclusiveMinimum", -1.5}, {"maximum", -0.125}};
  auto n = compile_schema(negative);
  for (const char* ok : {"-1.4999", "-1", "-0.125", "-0.5"}) EXPECT_TRUE(matches(n, ok)) << ok;
  for (const char* bad : {"-1.5", "-1.50", "-0.12", "0", "-2"}) EXPECT_FALSE(matches(n, bad)) << bad;
  expect_generated_valid(negative);
  expect_generated_valid({{"type", "number"}, {"minimum", 1e-5}, {"maximum", 2.5e3}});
  // At most 15 significant digits: "3.0000000000000001" would be read as the double 3.0, not above 3.
  auto above = compile_schema({{"type", "number"}, {"exclusiveMinimum", 3}});
  EXPECT_TRUE(matches(above, "3.00000000000001"));
  EXPECT_FALSE(matches(above, "3.0000000000000001"));
  EXPECT_NE(schema_error({{"type", "number"}, {"minimum", 1e16}}).find("outside the enforceable range"),
            std::string::npos);
  EXPECT_NE(schema_error({{"type", "number"}, {"maximum", -1e16}}).find("outside the enforceable range"),
            std::string::npos);
  // A bound at or past 1e15 on its own side holds for every number written (under 1e15): it bounds nothing.
  const json wide = {{"type", "number"}, {"minimum", 0}, {"maximum", 9007199254740991}};
  auto w = compile_schema(wide);
  for (const char* ok : {"0", "999999999999999", "12.5"}) EXPECT_TRUE(matches(w, ok)) << ok;
  for (const char* bad : {"-1", "1000000000000000", "1e3"}) EXPECT_FALSE(matches(w, bad)) << bad;
  expect_generated_valid(wide);
  expect_generated_valid({{"type", "number"}, {"exclusiveMinimum", -1e15}, {"exclusiveMaximum", 1e15}});
}

// zod 4 writes the safe-integer bounds +-(2^53 - 1) into every .int(): integer bounds hold anywhere in int64.
TEST(JsonSchemaConverter, IntegerBoundsUpToSixtyFourBits) {
  const json safe = {{"type", "integer"}, {"minimum", -9007199254740991}, {"maximum", 9007199254740991}};
  auto g = compile_schema(safe);
  for (const char* ok : {"0", "-1", "42", "9007199254740991", "-9007199254740991", "9007199254740990"})
    EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"9007199254740992", "-9007199254740992", "10000000000000000", "1.5", "-0"})
    EXPECT_FALSE(matches(g, bad)) << bad;
  expect_generated_valid(safe);
  auto below = compile_schema({{"type", "integer"}, {"exclusiveMaximum", 9007199254740992.0}, {"minimum", 0}});
  EXPECT_TRUE(matches(below, "9007199254740991"));
  EXPECT_FALSE(matches(below, "9007199254740992"));
  // The largest double under 2^63, either sign.
  auto wide =
      compile_schema({{"type", "integer"}, {"minimum", -9223372036854774784.0}, {"maximum", 9223372036854774784.0}});
  EXPECT_TRUE(matches(wide, "9223372036854774784"));
  EXPECT_TRUE(matches(wide, "-9223372036854774784"));
  EXPECT_FALSE(matches(wide, "9223372036854774785"));
  EXPECT_FALSE(matches(wide, "-9223372036854774785"));
  EXPECT_NE(schema_error({{"type", "integer"}, {"minimum", 1e19}}).find("outside the enforceable range of integers"),
            std::string::npos);
  EXPECT_NE(schema_error({{"type", "integer"}, {"maximum", -1e19}}).find("outside the enforceable range of integers"),
            std::string::npos);
  // A bound past every 64-bit integer on its own side: int64's range there (2^63 itself as an inclusive maximum).
  const json past = {{"type", "integer"}, {"minimum", -1e19}, {"maximum", 9223372036854775808.0}};
  auto p = compile_schema(past);
  for (const char* ok : {"0", "9223372036854775807", "-9223372036854775807", "123"}) EXPECT_TRUE(matches(p, ok)) << ok;
  for (const char* bad : {"9223372036854775808", "10000000000000000000", "-9223372036854775808"})
    EXPECT_FALSE(matches(p, bad)) << bad;
  expect_generated_valid(past);
  EXPECT_NE(schema_error({{"type", "integer"}, {"exclusiveMaximum", 9223372036854775808.0}})
                .find("outside the enforceable range of integers"),
            std::string::npos);
  // zod 4's z.record(z.string(), ...) writes a propertyNames that every key satisfies: nothing to enforce.
  const json record = {{"type", "object"},
                       {"propertyNames", {{"type", "string"}}},
                       {"additionalProperties", {{"type", "integer"}, {"minimum", -9007199254740991}}}};
  auto r = compile_schema(record);
  EXPECT_TRUE(matches(r, R"({"a":1,"b":-2})"));
  EXPECT_FALSE(matches(r, R"({"a":"x"})"));
  EXPECT_NE(schema_error({{"type", "object"}, {"propertyNames", {{"minItems", 3}}}})
                .find("'minItems' in 'propertyNames' is not supported"),
            std::string::npos);
  // Bounds that leave no integer.
  EXPECT_FALSE(json_schema_to_grammar(json{{"type", "integer"}, {"minimum", 1.2}, {"maximum", 1.8}}).ok());
}

// pattern, format and lengths together: the string is in each one's language (zod 4 writes a pattern beside the
// format of .uuid(), .iso.datetime() and .email()).
TEST(JsonSchemaConverter, PatternFormatAndLengthsIntersect) {
  const json uuid_v4 = {{"type", "string"},
                        {"format", "uuid"},
                        {"pattern", "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"}};
  auto u = compile_schema(uuid_v4);
  EXPECT_TRUE(matches(u, R"("123e4567-e89b-42d3-a456-426614174000")"));
  EXPECT_FALSE(matches(u, R"("123e4567-e89b-12d3-a456-426614174000")"));  // the format's, not the pattern's
  EXPECT_FALSE(matches(u, R"("123E4567-E89B-42D3-A456-426614174000")"));  // the format's, but not the pattern's
  expect_generated_valid(uuid_v4, 20);
  const json bounded = {{"type", "string"}, {"pattern", "^[a-z]+[0-9]*$"}, {"minLength", 3}, {"maxLength", 5}};
  auto b = compile_schema(bounded);
  for (const char* ok : {R"("abc")", R"("ab1")", R"("a1234")", R"("abcde")"}) EXPECT_TRUE(matches(b, ok)) << ok;
  for (const char* bad : {R"("ab")", R"("abcdef")", R"("1abc")", R"("ab-c")"}) EXPECT_FALSE(matches(b, bad)) << bad;
  expect_generated_valid(bounded, 30);
  // A search pattern (unanchored) with a length: any string of 2 to 4 characters that contains "x".
  const json search = {{"type", "string"}, {"pattern", "x"}, {"minLength", 2}, {"maxLength", 4}};
  auto sx = compile_schema(search);
  for (const char* ok : {R"("ax")", R"("xx")", R"("abxc")"}) EXPECT_TRUE(matches(sx, ok)) << ok;
  for (const char* bad : {R"("x")", R"("abcd")", R"("abcdx")"}) EXPECT_FALSE(matches(sx, bad)) << bad;
  expect_generated_valid(search, 30);
  // Disjoint constraints leave no string.
  EXPECT_NE(
      schema_error({{"type", "string"}, {"pattern", "^a+$"}, {"maxLength", 0}, {"minLength", 1}}).find("no string"),
      std::string::npos);
}

TEST(JsonSchemaConverter, AnyOfOneOfAllOf) {
  const json any_of = {{"anyOf", {{{"type", "integer"}, {"minimum", 10}}, {{"type", "string"}, {"maxLength", 1}}}}};
  auto g = compile_schema(any_of);
  EXPECT_TRUE(matches(g, "12"));
  EXPECT_TRUE(matches(g, R"("x")"));
  EXPECT_FALSE(matches(g, "9"));
  expect_generated_valid(any_of);
  const json tagged = {{"oneOf",
                        {{{"type", "object"},
                          {"properties", {{"kind", {{"const", "cat"}}}, {"lives", {{"type", "integer"}}}}},
                          {"required", {"kind"}}},
                         {{"type", "object"},
                          {"properties", {{"kind", {{"const", "dog"}}}, {"good", {{"type", "boolean"}}}}},
                          {"required", {"kind"}}}}}};
  expect_generated_valid(tagged);
  expect_generated_valid({{"oneOf", {{{"type", "string"}}, {{"type", "null"}}}}});
  // Overlapping branches exclude each other: integer and not number, number and not integer (a number with a
  // fraction, which the grammar does not tell apart): no value is left, and the schema is refused.
  EXPECT_FALSE(json_schema_to_grammar(json{{"oneOf", {{{"type", "integer"}}, {{"type", "number"}}}}}).ok());
  const json all_of = {
      {"allOf",
       {{{"type", "object"}, {"properties", {{"a", {{"type", "integer"}, {"minimum", 0}}}}}, {"required", {"a"}}},
        {{"properties", {{"a", {{"maximum", 5}}}, {"b", {{"type", "string"}}}}}, {"required", {"b"}}}}}};
  auto all = compile_schema(all_of);
  EXPECT_TRUE(matches(all, R"({"a":3,"b":"x"})"));
  EXPECT_FALSE(matches(all, R"({"a":6,"b":"x"})"));
  EXPECT_FALSE(matches(all, R"({"a":3})"));
  expect_generated_valid(all_of);
  // Siblings of anyOf apply to every branch.
  const json shared = {{"type", "object"},
                       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
                       {"anyOf", {{{"required", {"a"}}}, {{"required", {"b"}}}}}};
  auto sh = compile_schema(shared);
  EXPECT_TRUE(matches(sh, R"({"a":1})"));
  EXPECT_TRUE(matches(sh, R"({"b":1})"));
  EXPECT_FALSE(matches(sh, "{}"));
  expect_generated_valid(shared);
}

TEST(JsonSchemaConverter, RefsDefsAndRecursion) {
  const json tree = {{"$defs",
                      {{"node",
                        {{"type", "object"},
                         {"properties",
                          {{"value", {{"type", "integer"}}},
                           {"children", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}},
                         {"required", {"value"}}}}}},
                     {"$ref", "#/$defs/node"}};
  auto g = compile_schema(tree);
  EXPECT_TRUE(matches(g, R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]})"));
  EXPECT_FALSE(matches(g, R"({"value":1,"children":[{"children":[]}]})"));
  expect_generated_valid(tree, 40);
  // draft-04..07 `definitions`, a reference to the root, and a $ref with siblings (merged).
  const json list = {{"type", "object"},
                     {"definitions", {{"positive", {{"type", "integer"}, {"minimum", 1}}}}},
                     {"properties",
                      {{"head", {{"$ref", "#/definitions/positive"}, {"maximum", 9}}},
                       {"tail", {{"anyOf", {{{"$ref", "#"}}, {{"type", "null"}}}}}}}},
                     {"required", {"head", "tail"}}};
  auto l = compile_schema(list);
  EXPECT_TRUE(matches(l, R"({"head":1,"tail":{"head":9,"tail":null}})"));
  EXPECT_FALSE(matches(l, R"({"head":10,"tail":null})"));
  EXPECT_FALSE(matches(l, R"({"head":0,"tail":null})"));
  expect_generated_valid(list, 40);
  auto escaped = compile_schema({{"$defs", {{"a/b", {{"type", "null"}}}, {"c~d", {{"type", "boolean"}}}}},
                                 {"type", "array"},
                                 {"prefixItems", {{{"$ref", "#/$defs/a~1b"}}, {{"$ref", "#/$defs/c~0d"}}}}});
  EXPECT_TRUE(matches(escaped, "[null,true]"));
  EXPECT_NE(schema_error({{"$ref", "#/$defs/missing"}}).find("does not resolve"), std::string::npos);
  EXPECT_NE(schema_error({{"$ref", "https://example.com/s.json"}}).find("only local references"), std::string::npos);
  EXPECT_NE(schema_error(
                {{"$defs", {{"a", {{"anyOf", {{{"$ref", "#/$defs/a"}}, {{"type", "null"}}}}}}}}, {"$ref", "#/$defs/a"}})
                .find("left recursion"),
            std::string::npos);
  EXPECT_NE(schema_error({{"$defs", {{"a", {{"$ref", "#/$defs/a"}}}}}, {"$ref", "#/$defs/a"}})
                .find("a cycle of references that never reaches a schema"),
            std::string::npos);
  EXPECT_NE(schema_error({{"$defs", {{"a", {{"$ref", "#/$defs/b"}, {"title", "A"}}}, {"b", {{"$ref", "#/$defs/a"}}}}},
                          {"$ref", "#/$defs/a"}})
                .find("a cycle of references that never reaches a schema"),
            std::string::npos);
}

// Draft-04/06/07 ignore the keywords beside a $ref (the dialect from $schema, or the options' when it names none);
// 2019-09 on, and a schema of no named draft, apply both. Values that merely look like schemas are left alone.
TEST(JsonSchemaConverter, RefSiblingsFollowTheDialect) {
  const json schema = json::parse(R"({"definitions": {"reffed": {"type": "array"}},
      "properties": {"foo": {"$ref": "#/definitions/reffed", "maxItems": 2}},
      "required": ["foo"]})");
  auto merged = compile_schema(schema);
  EXPECT_TRUE(matches(merged, R"({"foo":[1,2]})"));
  EXPECT_FALSE(matches(merged, R"({"foo":[1,2,3]})"));
  EXPECT_FALSE(matches(merged, R"({"foo":"x"})"));
  for (const char* uri : {"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
                          "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema"}) {
    json with_uri = schema;
    with_uri["$schema"] = uri;
    auto ref_alone = compile_schema(with_uri);
    EXPECT_TRUE(matches(ref_alone, R"({"foo":[1,2,3]})")) << uri;
    EXPECT_FALSE(matches(ref_alone, R"({"foo":"x"})")) << uri;
  }
  for (const char* uri : {"https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema"}) {
    json with_uri = schema;
    with_uri["$schema"] = uri;
    EXPECT_FALSE(matches(compile_schema(with_uri), R"({"foo":[1,2,3]})")) << uri;
  }
  JsonGrammarOptions draft7;
  draft7.dialect = JsonSchemaDialect::kDraft7;
  EXPECT_TRUE(matches(compile_schema(schema, draft7), R"({"foo":[1,2,3]})"));
  // $schema wins over the options' dialect.
  json later = schema;
  later["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  EXPECT_FALSE(matches(compile_schema(later, draft7), R"({"foo":[1,2,3]})"));
  // A $ref at the root keeps its definitions to point into; one inside allOf, items and patternProperties is alone
  // too; an enum value with a "$ref" key is data, and a property named "$ref" is a name.
  const json nested = json::parse(R"({"$ref": "#/definitions/a", "type": "string", "definitions": {
      "a": {"type": "object", "properties": {"$ref": {"type": "integer"},
                                            "e": {"enum": [{"$ref": "#/definitions/a", "x": 1}]},
                                            "l": {"type": "array", "items": {"$ref": "#/definitions/n", "minimum": 5}},
                                            "p": {"allOf": [{"$ref": "#/definitions/n", "maximum": 0}]}}},
      "n": {"type": "number"}}})");
  auto n = compile_schema(nested, draft7);
  EXPECT_TRUE(matches(n, R"({"$ref":1,"l":[1,2],"p":3})"));
  EXPECT_FALSE(matches(n, R"({"$ref":"x"})"));
  EXPECT_FALSE(matches(n, R"("s")"));
  EXPECT_TRUE(matches(n, R"({"e":{"$ref":"#/definitions/a","x":1}})"));
  EXPECT_FALSE(matches(n, R"({"e":{"$ref":"#/definitions/a"}})"));
  EXPECT_EQ(parse_json_schema_dialect("draft2019-09"), JsonSchemaDialect::kDraft2019_09);
  EXPECT_EQ(parse_json_schema_dialect("draft-07"), std::nullopt);
}

// A chain of aliases (schemas that are only a $ref) is one rule, however long: the matcher would otherwise descend
// one call per alias before its first byte and give up past its expansion bound.
TEST(JsonSchemaConverter, AliasChainsShareTheRuleAtTheirEnd) {
  constexpr int kLinks = 3000;
  json defs = json::object();
  for (int i = 0; i < kLinks; ++i) defs["d" + std::to_string(i)] = {{"$ref", "#/$defs/d" + std::to_string(i + 1)}};
  defs["d" + std::to_string(kLinks)] = {{"type", "integer"}, {"minimum", 3}, {"maximum", 7}};
  const json schema = {{"type", "array"}, {"items", {{"$ref", "#/$defs/d0"}}}, {"$defs", defs}};
  Result<Grammar> g = json_schema_to_grammar(schema);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LE(g->rules.size(), 8u);  // the root, the one integer rule, the shared whitespace/number helpers
  auto compiled = compile_schema(schema);
  EXPECT_TRUE(matches(compiled, "[3,7,5]"));
  EXPECT_FALSE(matches(compiled, "[8]"));
  EXPECT_FALSE(matches(compiled, "[2]"));
}

TEST(JsonSchemaConverter, BooleanAndEmptySchemas) {
  auto any = compile_schema(json::object());
  for (const char* ok : {"1", "\"s\"", "null", "[1,[2,{}]]", R"({"a":{"b":[true]}})"})
    EXPECT_TRUE(matches(any, ok)) << ok;
  auto t = compile_schema(true);
  EXPECT_TRUE(matches(t, "[]"));
  EXPECT_NE(schema_error(false).find("matches no string"), std::string::npos);
  auto prop_false = compile_schema({{"type", "object"}, {"properties", {{"a", false}, {"b", {{"type", "null"}}}}}});
  EXPECT_TRUE(matches(prop_false, R"({"b":null})"));
  EXPECT_FALSE(matches(prop_false, R"({"a":1})"));
  // Keywords constrain only their own type: without a type, every value of another type is valid.
  auto untyped_object = compile_schema({{"properties", {{"x", {{"type", "integer"}}}}}, {"required", {"x"}}});
  for (const char* ok : {R"({"x":1})", "[1]", R"("s")", "12", "1.5", "true", "null"})
    EXPECT_TRUE(matches(untyped_object, ok)) << ok;
  for (const char* bad : {"{}", R"({"x":"1"})"}) EXPECT_FALSE(matches(untyped_object, bad)) << bad;
  auto untyped_number = compile_schema({{"maximum", 5}});
  for (const char* ok : {"5", "-3.5", R"("x")", "[]", "{}", "false", "null"}) EXPECT_TRUE(matches(untyped_number, ok)) << ok;
  EXPECT_FALSE(matches(untyped_number, "5.5"));
  auto untyped_mixed = compile_schema({{"minLength", 2}, {"maxItems", 1}});
  for (const char* ok : {R"("ab")", "[1]", "7", "{}"}) EXPECT_TRUE(matches(untyped_mixed, ok)) << ok;
  for (const char* bad : {R"("a")", "[1,2]"}) EXPECT_FALSE(matches(untyped_mixed, bad)) << bad;
  expect_generated_valid({{"minimum", 2}, {"pattern", "^a"}, {"required", {"k"}}, {"minItems", 1}});
  // After a positional list, absent items/additionalItems allow any further items.
  for (const json& tuple : {json{{"prefixItems", {{{"type", "integer"}}}}}, json{{"items", {{{"type", "integer"}}}}}}) {
    auto g = compile_schema(tuple);
    for (const char* ok : {"[]", "[1]", R"([1,"foo",false])"}) EXPECT_TRUE(matches(g, ok)) << ok << tuple.dump();
    EXPECT_FALSE(matches(g, R"(["foo"])")) << tuple.dump();
  }
  // An object const compares whatever the members' order once properties may come in any order.
  JsonGrammarOptions any_order;
  any_order.any_property_order = true;
  auto const_object = compile_schema({{"const", {{"foo", "bar"}, {"baz", "bax"}}}}, any_order);
  for (const char* ok : {R"({"foo":"bar","baz":"bax"})", R"({"baz":"bax","foo":"bar"})"})
    EXPECT_TRUE(matches(const_object, ok)) << ok;
  for (const char* bad : {R"({"foo":"bar"})", R"({"baz":"bax","foo":"bar","foo":"bar"})"})
    EXPECT_FALSE(matches(const_object, bad)) << bad;
  auto annotated =
      compile_schema({{"title", "T"}, {"description", "d"}, {"type", "integer"}, {"examples", {1}}, {"x-vendor", 1}});
  EXPECT_TRUE(matches(annotated, "5"));
}

TEST(JsonSchemaConverter, JsonObjectMode) {
  Result<Grammar> g = json_object_grammar();
  ASSERT_TRUE(g.ok()) << g.error();
  auto c = testing::with_bytes(std::move(g).value());
  EXPECT_TRUE(matches(c, "{}"));
  EXPECT_TRUE(matches(c, R"({"a": [1, 2.5, "x", null, {"b": false}]})"));
  EXPECT_FALSE(matches(c, "[]"));
  EXPECT_FALSE(matches(c, "1"));
  std::mt19937_64 rng(3);
  for (int32_t i = 0; i < 50; ++i) {
    std::optional<std::string> text = random_sentence(c, rng);
    ASSERT_TRUE(text);
    const json v = json::parse(*text, nullptr, false);
    EXPECT_TRUE(v.is_object()) << *text;
  }
}

// patternProperties: a declared property satisfies its schema and every matching pattern's; an undeclared one every
// pattern it matches, or additionalProperties when it matches none. propertyNames restricts every name.
TEST(JsonSchemaConverter, PatternPropertiesAndPropertyNames) {
  const json schema = {
      {"type", "object"},
      {"properties", {{"id", {{"type", "integer"}}}, {"x_n", {{"type", "number"}}}}},
      {"patternProperties", {{"^x_", {{"type", "integer"}}}, {"_n$", {{"type", "number"}, {"minimum", 0}}}}},
      {"additionalProperties", {{"type", "string"}}}};
  auto g = compile_schema(schema);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(g, R"({"id":1,"x_a":2,"b":"s"})"));
  EXPECT_TRUE(matches(g, R"({"x_n":3,"x_b_n":4,"c_n":0.5})"));
  EXPECT_FALSE(matches(g, R"({"x_n":1.5})"));   // declared, and matches ^x_: an integer
  EXPECT_FALSE(matches(g, R"({"x_n":-1})"));    // and _n$: not below 0
  EXPECT_FALSE(matches(g, R"({"x_a":"s"})"));   // matches ^x_
  EXPECT_FALSE(matches(g, R"({"x_b_n":-4})"));  // matches both patterns
  EXPECT_FALSE(matches(g, R"({"c_n":"s"})"));   // matches _n$ only
  EXPECT_FALSE(matches(g, R"({"b":1})"));       // matches none: additionalProperties
  expect_generated_valid(schema, 100);
  // Closed by additionalProperties: false, only names a pattern matches are allowed beside the declared ones.
  const json closed = {{"type", "object"},
                       {"patternProperties", {{"^[a-z]+$", {{"type", "boolean"}}}}},
                       {"additionalProperties", false}};
  auto c = compile_schema(closed);
  EXPECT_TRUE(matches(c, R"({"ab":true,"c":false})"));
  EXPECT_FALSE(matches(c, R"({"aB":true})"));
  EXPECT_FALSE(matches(c, R"({"a":1})"));
  expect_generated_valid(closed);
  // A required name no pattern matches, with additionalProperties false: no object satisfies it.
  EXPECT_FALSE(json_schema_to_grammar(json{{"type", "object"},
                                           {"required", {"A"}},
                                           {"patternProperties", {{"^[a-z]+$", true}}},
                                           {"additionalProperties", false}})
                   .ok());
  // propertyNames: a pattern and a length on every name, declared ones included.
  const json named = {{"type", "object"},
                      {"properties", {{"ok", {{"type", "integer"}}}, {"BAD", {{"type", "integer"}}}}},
                      {"propertyNames", {{"pattern", "^[a-z]+$"}, {"maxLength", 3}}},
                      {"additionalProperties", {{"type", "null"}}}};
  auto n = compile_schema(named);
  EXPECT_TRUE(matches(n, R"({"ok":1,"abc":null})"));
  EXPECT_FALSE(matches(n, R"({"BAD":1})"));
  EXPECT_FALSE(matches(n, R"({"abcd":null})"));
  EXPECT_FALSE(matches(n, R"({"a1":null})"));
  expect_generated_valid(named);
  auto listed = compile_schema({{"type", "object"}, {"propertyNames", {{"enum", {"a", "b"}}}}});
  EXPECT_TRUE(matches(listed, R"({"a":[1],"b":{}})"));
  EXPECT_FALSE(matches(listed, R"({"c":1})"));
  EXPECT_NE(schema_error({{"type", "object"}, {"patternProperties", {{"(", true}}}}).find("patternProperties"),
            std::string::npos);
}

// not: the complement of types, enums and consts, bounds, lengths, patterns and required sets; refused by name
// where it is not expressible.
TEST(JsonSchemaConverter, NotOfExpressibleSchemas) {
  auto not_string = compile_schema({{"not", {{"type", "string"}}}});
  EXPECT_TRUE(matches(not_string, "1"));
  EXPECT_TRUE(matches(not_string, R"({"a":"b"})"));
  EXPECT_FALSE(matches(not_string, R"("s")"));
  const json not_listed = {{"type", "string"}, {"not", {{"enum", {"a", "b\n"}}}}};
  auto nl = compile_schema(not_listed);
  EXPECT_TRUE(matches(nl, R"("c")"));
  EXPECT_TRUE(matches(nl, R"("ab")"));
  EXPECT_FALSE(matches(nl, R"("a")"));
  EXPECT_FALSE(matches(nl, R"("b\n")"));
  EXPECT_FALSE(matches(nl, R"("\u0061")"));  // "a" spelled otherwise
  expect_generated_valid(not_listed);
  const json not_pattern = {{"type", "string"}, {"maxLength", 4}, {"not", {{"pattern", "^x"}}}};
  auto np = compile_schema(not_pattern);
  EXPECT_TRUE(matches(np, R"("ax")"));
  EXPECT_FALSE(matches(np, R"("xa")"));
  EXPECT_FALSE(matches(np, R"("\u0078a")"));
  expect_generated_valid(not_pattern);
  const json not_numbers = {{"type", "integer"}, {"minimum", 0}, {"maximum", 9}, {"not", {{"enum", {3, 5}}}}};
  auto nn = compile_schema(not_numbers);
  for (int i = 0; i <= 9; ++i) EXPECT_EQ(matches(nn, std::to_string(i)), i != 3 && i != 5) << i;
  const json not_bounds = {{"type", "number"}, {"not", {{"minimum", 2}, {"maximum", 5}}}};
  auto nb = compile_schema(not_bounds);
  EXPECT_TRUE(matches(nb, "1.5"));
  EXPECT_TRUE(matches(nb, "5.5"));
  EXPECT_FALSE(matches(nb, "2"));
  EXPECT_FALSE(matches(nb, "5"));
  const json not_required = {{"type", "object"},
                             {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
                             {"not", {{"required", {"a", "b"}}}}};
  auto nr = compile_schema(not_required);
  EXPECT_TRUE(matches(nr, R"({"a":1})"));
  EXPECT_TRUE(matches(nr, R"({})"));
  EXPECT_FALSE(matches(nr, R"({"a":1,"b":2})"));
  expect_generated_valid(not_required);
  auto not_any = json_schema_to_grammar(json{{"not", json::object()}});
  EXPECT_FALSE(not_any.ok());
  EXPECT_NE(schema_error({{"type", "array"}, {"not", {{"items", {{"type", "string"}}}}}})
                .find("schema at #/not: 'not' of a schema with 'items' is not supported"),
            std::string::npos);
  EXPECT_NE(schema_error({{"not", {{"type", "integer"}}}}).find("'not' of a schema of type integer"),
            std::string::npos);
}

// if/then/else: (if and then) or (not if and else), with if's complement.
TEST(JsonSchemaConverter, IfThenElse) {
  const json schema = {{"type", "object"},
                       {"properties", {{"kind", {{"enum", {"a", "b"}}}}, {"n", {{"type", "integer"}}}}},
                       {"required", {"kind"}},
                       {"if", {{"properties", {{"kind", {{"const", "a"}}}}}}},
                       {"then", {{"required", {"n"}}}},
                       {"else", {{"properties", {{"n", {{"maximum", 0}}}}}}}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, R"({"kind":"a","n":5})"));
  EXPECT_FALSE(matches(g, R"({"kind":"a"})"));
  EXPECT_TRUE(matches(g, R"({"kind":"b"})"));
  EXPECT_TRUE(matches(g, R"({"kind":"b","n":-1})"));
  EXPECT_FALSE(matches(g, R"({"kind":"b","n":1})"));
  expect_generated_valid(schema, 100);
}

// oneOf whose branches overlap: each branch excludes the others it may share a value with.
TEST(JsonSchemaConverter, OverlappingOneOfIsExclusive) {
  const json schema = {{"oneOf", {{{"type", "integer"}, {"minimum", 0}}, {{"type", "integer"}, {"maximum", 10}}}}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, "-3"));
  EXPECT_TRUE(matches(g, "11"));
  EXPECT_FALSE(matches(g, "0"));
  EXPECT_FALSE(matches(g, "10"));
  expect_generated_valid(schema);
  const json objects = {{"type", "object"},
                        {"oneOf", {{{"required", {"a"}}}, {{"required", {"b"}}}}},
                        {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}}};
  auto o = compile_schema(objects);
  EXPECT_TRUE(matches(o, R"({"a":1})"));
  EXPECT_TRUE(matches(o, R"({"b":1})"));
  EXPECT_FALSE(matches(o, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(o, R"({})"));
  expect_generated_valid(objects);
  EXPECT_NE(schema_error({{"oneOf", {{{"type", "array"}}, {{"items", {{"type", "integer"}}}}}}})
                .find("oneOf branches 0 and 1 may both match one value, and the complement"),
            std::string::npos);
}

// Dependencies: a present trigger property needs the listed ones (or its schema); an absent one nothing.
TEST(JsonSchemaConverter, Dependencies) {
  const json schema = {{"type", "object"},
                       {"properties", {{"card", {{"type", "string"}}}, {"cvv", {{"type", "string"}}}}},
                       {"dependentRequired", {{"card", {"cvv"}}}},
                       {"dependentSchemas", {{"cvv", {{"properties", {{"cvv", {{"maxLength", 4}}}}}}}}}};
  auto g = compile_schema(schema);
  EXPECT_TRUE(matches(g, R"({})"));
  EXPECT_TRUE(matches(g, R"({"card":"x","cvv":"123"})"));
  EXPECT_TRUE(matches(g, R"({"cvv":"123"})"));
  EXPECT_FALSE(matches(g, R"({"card":"x"})"));
  EXPECT_FALSE(matches(g, R"({"card":"x","cvv":"12345"})"));
  expect_generated_valid(schema);
  const json draft4 = {{"type", "object"}, {"dependencies", {{"a", {"b"}}}}};
  auto d = compile_schema(draft4);
  EXPECT_TRUE(matches(d, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(d, R"({"a":1})"));
  EXPECT_TRUE(matches(d, R"({"b":1})"));
  expect_generated_valid(draft4);
}

// enum/const beside keywords unknown to JSON Schema, or beside keywords of a type no listed value has.
TEST(JsonSchemaConverter, EnumBesideOtherKeywords) {
  auto g = compile_schema({{"type", "string"},
                           {"enum", {"ab", "cd", "x"}},
                           {"readonly", true},
                           {"additionalItems", false},
                           {"pattern", "^[ab]"}});
  EXPECT_TRUE(matches(g, R"("ab")"));
  EXPECT_FALSE(matches(g, R"("cd")"));  // fails the pattern
  EXPECT_FALSE(matches(g, R"("x")"));
  EXPECT_NE(schema_error({{"enum", {json::array({1, 1})}}, {"uniqueItems", true}}).find("'uniqueItems'"),
            std::string::npos);
}

// multipleOf: a power of ten's reciprocal bounds the fraction digits; a divisor of 1000 the last digits.
TEST(JsonSchemaConverter, MultipleOf) {
  auto cents = compile_schema({{"type", "number"}, {"multipleOf", 0.01}, {"minimum", 0}});
  for (const char* ok : {"0", "1.5", "12.34", "7"}) EXPECT_TRUE(matches(cents, ok)) << ok;
  for (const char* bad : {"1.234", "-1", "0.001"}) EXPECT_FALSE(matches(cents, bad)) << bad;
  auto fours = compile_schema({{"type", "integer"}, {"multipleOf", 4}});
  for (int i = -30; i <= 130; ++i) EXPECT_EQ(matches(fours, std::to_string(i)), i % 4 == 0) << i;
  auto whole = compile_schema({{"type", "number"}, {"multipleOf", 1.0}});
  EXPECT_TRUE(matches(whole, "12"));
  EXPECT_FALSE(matches(whole, "1.5"));
  // A number whose multiples are integers may still be written with a fraction of zeros (Python writes 6000.0),
  // within its bounds; an integer may not.
  const json pounds = {{"type", "number"}, {"minimum", 0}, {"maximum", 99999999}, {"multipleOf", 5}};
  auto p = compile_schema(pounds);
  for (const char* ok : {"6000", "6000.0", "0.00", "99999995.0"}) EXPECT_TRUE(matches(p, ok)) << ok;
  for (const char* bad : {"6000.5", "6001.0", "-5.0", "100000000.0", "6000."}) EXPECT_FALSE(matches(p, bad)) << bad;
  expect_generated_valid(pounds);
  EXPECT_FALSE(matches(compile_schema({{"type", "integer"}, {"multipleOf", 1}}), "6000.0"));
  expect_generated_valid({{"type", "integer"}, {"multipleOf", 25}, {"maximum", 1000}});
  EXPECT_NE(schema_error({{"type", "integer"}, {"multipleOf", 3}}).find("'multipleOf' 3 is not supported"),
            std::string::npos);
  // minProperties 1 without required properties: a non-empty object.
  auto nonempty = compile_schema({{"type", "object"}, {"minProperties", 1}});
  EXPECT_FALSE(matches(nonempty, "{}"));
  EXPECT_TRUE(matches(nonempty, R"({"a":1})"));
}

TEST(JsonSchemaConverter, UnsupportedKeywordsAreErrorsNamingThePlace) {
  for (const char* keyword : {"unevaluatedProperties", "$dynamicRef"}) {
    const json schema = {{"type", "object"}, {"properties", {{"p", {{keyword, json::object()}}}}}};
    EXPECT_NE(schema_error(schema).find(fmt::format("schema at #/properties/p: '{}' is not supported", keyword)),
              std::string::npos)
        << keyword;
  }
  EXPECT_NE(schema_error({{"type", "integer"}, {"multipleOf", 3}}).find("'multipleOf'"), std::string::npos);
  EXPECT_NE(schema_error({{"type", "object"}, {"minProperties", 2}}).find("minProperties"), std::string::npos);
  EXPECT_NE(
      schema_error({{"type", "object"}, {"properties", {{"a", true}}}, {"minProperties", 2}}).find("minProperties"),
      std::string::npos);
  EXPECT_NE(
      schema_error({{"type", "object"}, {"additionalProperties", true}, {"maxProperties", 2}}).find("maxProperties"),
      std::string::npos);
  EXPECT_NE(schema_error({{"type", "array"}, {"maxItems", 1000000}}).find("enforceable limit"), std::string::npos);
  EXPECT_NE(schema_error({{"type", "strin"}}).find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(schema_error(json::array()).find("must be an object or a boolean"), std::string::npos);
  EXPECT_NE(json_schema_to_grammar(std::string_view("{\"type\":")).error().find("not valid JSON"), std::string::npos);
  EXPECT_TRUE(compile_schema({{"type", "integer"}, {"multipleOf", 1}}));
}

}  // namespace
}  // namespace pagoda::grammar
