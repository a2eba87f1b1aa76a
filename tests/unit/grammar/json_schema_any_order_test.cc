// Tests for JsonGrammarOptions::any_property_order (json_schema_converter.h): every order of an object's listed
// properties is accepted, none twice, never without a required one, extra properties anywhere between; exhaustively
// over small objects, against random outputs that must validate and hold no key twice; past 7 listed properties
// (or the per-schema budget) the untracked optional ones, which may repeat; dependencies of names on names held in
// the tracked sets; too many required ones keep `properties` order, and JsonSchemaNotes says how many of each.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "grammar/json_schema_converter.h"
#include "grammar/random_sentence.h"
#include "grammar_test_util.h"
#include "schema_validator.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::matches;

constexpr JsonGrammarOptions kAnyOrder{.any_property_order = true};

std::shared_ptr<const CompiledGrammar> compile_any_order(const json& schema, JsonGrammarOptions options = kAnyOrder,
                                               JsonSchemaNotes* notes = nullptr) {
  Result<Grammar> g = json_schema_to_grammar(schema, options, {}, notes);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  if (!g.ok()) return nullptr;
  return testing::with_bytes(std::move(g).value());
}

// Random outputs validate (a name written twice: as parsed, the last value) and repeat no listed name but those of
// `may_repeat` (optional properties past the tracked ones).
void expect_outputs_valid_any_order(const json& schema, int32_t count = 80, const std::set<std::string>& may_repeat = {}) {
  auto g = compile_any_order(schema);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(3);
  std::set<std::string> orders;
  for (int32_t i = 0; i < count; ++i) {
    std::optional<std::string> text = random_sentence(g, rng, {.soft_max_bytes = 64, .hard_max_bytes = 20000});
    ASSERT_TRUE(text.has_value()) << schema.dump();
    const json value = json::parse(*text, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << "not JSON: " << *text;
    EXPECT_EQ(testing::validate(schema, value), "") << *text << "\nschema " << schema.dump();
    std::set<std::string> once = testing::listed_property_names(schema);
    for (const std::string& name : may_repeat) once.erase(name);
    EXPECT_EQ(testing::duplicate_listed_key(*text, once), "") << *text;
    std::string order;
    for (auto it = value.begin(); value.is_object() && it != value.end(); ++it) order += it.key() + ",";
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 2u) << "the outputs should show several property orders";
}

TEST(JsonSchemaAnyOrder, EveryOrderOnceEachRequiredPresent) {
  // Every sequence of up to 5 keys over {a, b, c, d}: accepted exactly when no key repeats and a and c are there.
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"a", {{"type", "integer"}}},
                         {"b", {{"type", "string"}}},
                         {"c", {{"type", "boolean"}}},
                         {"d", {{"type", "null"}}}}},
                       {"required", {"a", "c"}},
                       {"additionalProperties", false}};
  auto g = compile_any_order(schema);
  ASSERT_TRUE(g);
  const std::map<char, std::string> values = {{'a', "1"}, {'b', "\"x\""}, {'c', "true"}, {'d', "null"}};
  int32_t accepted = 0;
  for (int32_t len = 0; len <= 5; ++len) {
    int32_t total = 1;
    for (int32_t i = 0; i < len; ++i) total *= 4;
    for (int32_t code = 0; code < total; ++code) {
      std::string keys;
      for (int32_t i = 0, c = code; i < len; ++i, c /= 4) keys += char('a' + c % 4);
      std::string text = "{";
      for (const char k : keys) text += fmt::format("{}\"{}\":{}", text.size() > 1 ? "," : "", k, values.at(k));
      text += "}";
      const bool distinct = std::set<char>(keys.begin(), keys.end()).size() == keys.size();
      const bool complete = keys.find('a') != std::string::npos && keys.find('c') != std::string::npos;
      EXPECT_EQ(matches(g, text), distinct && complete) << text;
      accepted += distinct && complete;
    }
  }
  EXPECT_EQ(accepted, 2 + 6 + 6 + 24);  // {a,c} with neither, one or both of b, d: 2! + 2 * 3! + 4!
  EXPECT_TRUE(matches(g, "{\n  \"c\": false,\n  \"a\": 2\n}"));
  EXPECT_FALSE(matches(g, R"({"c":1,"a":2})"));  // each value still has its own schema
  expect_outputs_valid_any_order(schema);
}

// Every sequence of up to 5 keys over `keys` (values 1, compact): accepted exactly when the validator accepts it and
// no key repeats; one where a name of `may_repeat` repeats (an extra property's: names of extras are not told
// apart) is accepted only if valid. Returns how many were accepted.
int32_t expect_key_sequences_exact(const json& schema, const std::string& keys, const std::string& may_repeat = "") {
  auto g = compile_any_order(schema);
  if (!g) return 0;
  const int32_t k = int32_t(keys.size());
  int32_t accepted = 0;
  for (int32_t len = 0; len <= 5; ++len) {
    int32_t total = 1;
    for (int32_t i = 0; i < len; ++i) total *= k;
    for (int32_t code = 0; code < total; ++code) {
      std::string seq;
      for (int32_t i = 0, c = code; i < len; ++i, c /= k) seq += keys[size_t(c % k)];
      std::string text = "{";
      for (const char key : seq) text += fmt::format("{}\"{}\":1", text.size() > 1 ? "," : "", key);
      text += "}";
      std::string once = seq;
      std::erase_if(once, [&](char c) { return may_repeat.find(c) != std::string::npos; });
      const bool distinct = std::set<char>(seq.begin(), seq.end()).size() == seq.size();
      const bool listed_once = std::set<char>(once.begin(), once.end()).size() == once.size();
      const bool valid = listed_once && testing::validate(schema, json::parse(text)).empty();
      const bool accepts = matches(g, text);
      if (distinct) {
        EXPECT_EQ(accepts, valid) << text << "\nschema " << schema.dump();
      } else if (accepts) {
        EXPECT_TRUE(valid) << text << "\nschema " << schema.dump();
      }
      accepted += accepts;
    }
  }
  return accepted;
}

TEST(JsonSchemaAnyOrder, DependenciesHoldInTheTrackedSets) {
  json props = json::object();
  for (const char* name : {"a", "b", "c", "d"}) props[name] = {{"type", "integer"}};
  // Enforced where the object ends, in the sets of members written (one rule family, not a choice per trigger).
  const json schema = {{"type", "object"},
                       {"properties", props},
                       {"additionalProperties", false},
                       {"dependentRequired", {{"a", {"b"}}, {"c", {"a", "d"}}}}};
  // The sets that hold: {}, {b}, {d}, {b, d}, {a, b}, {a, b, d}, {a, b, c, d}, each in every order.
  EXPECT_EQ(expect_key_sequences_exact(schema, "abcd"), 1 + 1 + 1 + 2 + 2 + 6 + 24);
  json draft4 = schema;
  draft4.erase("dependentRequired");
  draft4["dependencies"] = {{"a", {"b"}}, {"c", {"a", "d"}}};
  expect_key_sequences_exact(draft4, "abcd");
  expect_outputs_valid_any_order(schema);
  // A needed name outside `properties` (an extra one): the dependency is a choice instead, still exact.
  json extra = {{"type", "object"}, {"properties", props}, {"dependencies", {{"a", {"e"}}}}};
  EXPECT_GT(expect_key_sequences_exact(extra, "abe", "e"), 0);
  // Beside a schema dependency and required ones.
  json mixed = {{"type", "object"},
                {"properties", props},
                {"required", {"d"}},
                {"additionalProperties", false},
                {"dependencies", {{"a", {"b"}}, {"b", {{"required", {"c"}}}}}}};
  EXPECT_GT(expect_key_sequences_exact(mixed, "abcd"), 0);
  // More than the 6 dependencies a choice each allows, on 7 members: one rule family, about the size without them.
  json seven = {{"type", "object"}, {"properties", json::object()}, {"dependentRequired", json::object()}};
  const std::string names = "abcdefg";
  for (size_t i = 0; i < names.size(); ++i) {
    seven["properties"][names.substr(i, 1)] = {{"type", "integer"}};
    seven["dependentRequired"][names.substr(i, 1)] = {names.substr((i + 1) % names.size(), 1)};
  }
  Result<Grammar> with = json_schema_to_grammar(seven, kAnyOrder);
  ASSERT_TRUE(with.ok()) << with.error();
  json without = seven;
  without.erase("dependentRequired");
  Result<Grammar> plain = json_schema_to_grammar(without, kAnyOrder);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_LE(with.value().states.size(), plain.value().states.size() + 8);
  auto g = testing::with_bytes(std::move(with).value());
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_TRUE(matches(g, R"({"g":1,"a":1,"f":1,"b":1,"e":1,"c":1,"d":1})"));
  EXPECT_FALSE(matches(g, R"({"g":1,"a":1,"f":1,"b":1,"e":1,"c":1})"));  // c needs d
  EXPECT_FALSE(matches(g, R"({"d":1})"));                                  // d needs e
  // The internal keyword written by a client, malformed: an error, in an object and under `not`.
  for (const json& bad : {json{{"type", "object"}, {"$pagoda:needs", {{"a", {1}}}}},
                          json{{"not", {{"$pagoda:needs", {{"a", "b"}}}}}}}) {
    Result<Grammar> refused = json_schema_to_grammar(bad, kAnyOrder);
    ASSERT_FALSE(refused.ok()) << bad.dump();
    EXPECT_NE(refused.error().find("must map names to lists of names"), std::string::npos) << refused.error();
  }
}

TEST(JsonSchemaAnyOrder, ExtraPropertiesAnywhereButNeverAListedName) {
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "string"}}}, {"b", {{"type", "integer"}}}}},
                       {"required", {"b"}},
                       {"additionalProperties", {{"type", "boolean"}}}};
  auto g = compile_any_order(schema);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(g, R"({"x":true,"b":1,"y":false,"a":"s","z":true})"));
  EXPECT_TRUE(matches(g, R"({"b":1})"));
  EXPECT_TRUE(matches(g, R"({"x":true,"b":1})"));
  EXPECT_FALSE(matches(g, R"({"x":true})"));            // b missing
  EXPECT_FALSE(matches(g, R"({"b":1,"x":1})"));         // an extra takes additionalProperties' schema
  EXPECT_FALSE(matches(g, R"({"b":1,"b":2})"));         // a listed name never twice...
  EXPECT_FALSE(matches(g, R"({"b":1,"x":true,"b":2})"));
  EXPECT_FALSE(matches(g, R"({"a":true,"b":1})"));      // ...nor as an extra with the extra's schema
  expect_outputs_valid_any_order(schema);
  // One listed property among extras: any order too.
  auto one = compile_any_order({{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}});
  EXPECT_TRUE(matches(one, R"({"z":[1],"a":1})"));
  EXPECT_FALSE(matches(one, R"({"z":[1]})"));
  EXPECT_FALSE(matches(one, R"({"a":1,"a":1})"));
}

TEST(JsonSchemaAnyOrder, NestedAndRecursiveObjects) {
  const json schema = {
      {"$defs",
       {{"node",
         {{"type", "object"},
          {"properties",
           {{"name", {{"type", "string"}}},
            {"children", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}},
            {"size", {{"type", "integer"}, {"minimum", 0}}}}},
          {"required", {"name"}},
          {"additionalProperties", false}}}}},
      {"$ref", "#/$defs/node"}};
  auto g = compile_any_order(schema);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(g, R"({"children":[{"size":1,"name":"b"}],"name":"a"})"));
  EXPECT_FALSE(matches(g, R"({"children":[{"size":1}],"name":"a"})"));
  expect_outputs_valid_any_order(schema);
}

TEST(JsonSchemaAnyOrder, DefaultKeepsPropertiesOrder) {
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
                       {"additionalProperties", false}};
  JsonSchemaNotes notes;
  auto ordered = compile_any_order(schema, {}, &notes);
  EXPECT_TRUE(matches(ordered, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(ordered, R"({"b":2,"a":1})"));
  EXPECT_EQ(notes.objects_any_order, 0);
  EXPECT_EQ(notes.objects_schema_order, 0);  // not asked for: nothing kept back
  auto any = compile_any_order(schema, kAnyOrder, &notes);
  EXPECT_TRUE(matches(any, R"({"b":2,"a":1})"));
  EXPECT_EQ(notes.objects_any_order, 1);
}

json integer_object(int32_t n, const std::string& prefix) {
  json s = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  for (int32_t i = 0; i < n; ++i) s["properties"][fmt::format("{}{}", prefix, i)] = {{"type", "integer"}};
  s["required"] = {fmt::format("{}0", prefix)};
  return s;
}

std::string reversed_object_text(int32_t n, const std::string& prefix) {
  std::string text = "{";
  for (int32_t i = n; i-- > 0;) text += fmt::format("{}\"{}{}\":{}", i + 1 < n ? "," : "", prefix, i, i);
  return text + "}";
}

TEST(JsonSchemaAnyOrder, LargeObjectsTrackTheirRequiredOnesAndLetTheRestRepeat) {
  JsonSchemaNotes notes;
  auto seven = compile_any_order(integer_object(7, "p"), kAnyOrder, &notes);
  EXPECT_EQ(notes.objects_any_order, 1);
  EXPECT_EQ(notes.objects_schema_order, 0);
  EXPECT_EQ(notes.objects_repeatable, 0);
  EXPECT_TRUE(matches(seven, reversed_object_text(7, "p")));
  EXPECT_FALSE(matches(seven, R"({"p6":1,"p0":0,"p6":2})"));
  // Eight: the required p0 tracked, p1..p7 free to come anywhere, also twice.
  auto eight = compile_any_order(integer_object(8, "p"), kAnyOrder, &notes);
  EXPECT_EQ(notes.objects_any_order, 1);
  EXPECT_EQ(notes.objects_schema_order, 0);
  EXPECT_EQ(notes.objects_repeatable, 1);
  EXPECT_TRUE(matches(eight, reversed_object_text(8, "p")));
  EXPECT_TRUE(matches(eight, R"({"p7":1,"p0":0,"p7":2})"));
  EXPECT_FALSE(matches(eight, R"({"p7":1})"));             // p0 missing
  EXPECT_FALSE(matches(eight, R"({"p0":0,"p0":1})"));      // the required one once
  EXPECT_TRUE(matches(eight, R"({"p0":0,"p3":1,"p3":1})"));
  EXPECT_FALSE(matches(eight, R"({"p0":0,"p7":"x"})"));    // each value its own schema
  EXPECT_FALSE(matches(eight, R"({"p0":0,"q":1})"));       // additionalProperties: false
  expect_outputs_valid_any_order(integer_object(8, "p"), 80, {"p1", "p2", "p3", "p4", "p5", "p6", "p7"});
}

TEST(JsonSchemaAnyOrder, ManyRequiredAmongManyOptional) {
  // 14 listed properties, 3 of them required (listed late), extras of their own schema: any order, every required
  // one exactly once.
  json schema = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", {{"type", "boolean"}}}};
  std::set<std::string> untracked;
  for (int32_t i = 0; i < 14; ++i) {
    schema["properties"][fmt::format("k{}", i)] = i % 2 ? json{{"type", "string"}, {"maxLength", 2}} : json{{"type", "integer"}};
    untracked.insert(fmt::format("k{}", i));  // tracked: the 3 required alone
  }
  schema["required"] = {"k13", "k10", "k11"};
  untracked.erase("k13");
  untracked.erase("k10");
  untracked.erase("k11");
  JsonSchemaNotes notes;
  auto g = compile_any_order(schema, kAnyOrder, &notes);
  ASSERT_TRUE(g);
  EXPECT_EQ(notes.objects_repeatable, 1);
  EXPECT_TRUE(matches(g, R"({"x":true,"k11":"a","k5":"b","k13":"c","k0":1,"k10":2,"k12":3,"y":false})"));
  EXPECT_TRUE(matches(g, R"({"k13":"c","k11":"a","k10":2,"k12":3,"k12":4})"));
  EXPECT_FALSE(matches(g, R"({"k13":"c","k11":"a","k12":3})"));           // k10 missing
  EXPECT_FALSE(matches(g, R"({"k13":"c","k11":"a","k10":2,"k11":"b"})"));  // a required one twice
  EXPECT_TRUE(matches(g, R"({"k13":"c","k11":"a","k10":2,"k0":1,"k0":1})"));
  EXPECT_FALSE(matches(g, R"({"k13":"c","k11":"a","k10":2,"k12":"s"})"));
  EXPECT_FALSE(matches(g, R"({"k13":"c","k11":"a","k10":2,"k12":true})"));  // a listed name never takes extras' schema
  expect_outputs_valid_any_order(schema, 120, untracked);
}

TEST(JsonSchemaAnyOrder, TooManyRequiredKeepPropertiesOrder) {
  json schema = integer_object(9, "r");
  schema["required"] = json::array();
  for (int32_t i = 0; i < 8; ++i) schema["required"].push_back(fmt::format("r{}", i));
  JsonSchemaNotes notes;
  auto g = compile_any_order(schema, kAnyOrder, &notes);
  EXPECT_EQ(notes.objects_any_order, 0);
  EXPECT_EQ(notes.objects_schema_order, 1);
  EXPECT_FALSE(matches(g, reversed_object_text(9, "r")));
  std::string ordered = "{";
  for (int32_t i = 0; i < 9; ++i) ordered += fmt::format("{}\"r{}\":{}", i ? "," : "", i, i);
  EXPECT_TRUE(matches(g, ordered + "}"));
}

TEST(JsonSchemaAnyOrder, BudgetPerSchemaBoundsManyObjects) {
  // 60 objects of 7 properties (7 * 2^6 + 2 * 2^7 = 704 states each, all tracked) would pass the schema's budget of
  // 2^15: the later ones track fewer optional properties (those may repeat), down to their one required property,
  // and the compile stays small. Every object takes any order.
  json schema = {{"type", "object"}, {"properties", json::object()}};
  for (int32_t k = 0; k < 60; ++k) schema["properties"][fmt::format("o{}", k)] = integer_object(7, fmt::format("k{}_", k));
  JsonSchemaNotes notes;
  Result<Grammar> g = json_schema_to_grammar(schema, kAnyOrder, {}, &notes);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(notes.objects_any_order, 61);
  EXPECT_EQ(notes.objects_schema_order, 0);
  EXPECT_GT(notes.objects_repeatable, 10);
  EXPECT_LT(g->states.size(), 200000u);
  auto cg = testing::with_bytes(std::move(g).value());
  std::string text = "{";
  for (int32_t k = 60; k-- > 0;) text += fmt::format("{}\"o{}\":{}", k < 59 ? "," : "", k, reversed_object_text(7, fmt::format("k{}_", k)));
  EXPECT_TRUE(matches(cg, text + "}"));
  EXPECT_FALSE(matches(cg, R"({"o0":{"k0_0":1,"k0_1":1,"k0_1":1}})"));  // the first objects track all seven
  EXPECT_TRUE(matches(cg, R"({"o59":{"k59_0":1,"k59_1":1,"k59_1":1}})"));
  EXPECT_FALSE(matches(cg, R"({"o59":{"k59_0":1,"k59_0":1}})"));
}

}  // namespace
}  // namespace pagoda::grammar
