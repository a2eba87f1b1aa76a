// The probe's JSON-line protocol (grammar/grammar_probe.h), which the JSON Schema Test Suite runner speaks: samples
// and acceptance per text, its error answers, and the any-order switch for objects.
#include "grammar/grammar_probe.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::grammar {
namespace {

nlohmann::json ask(const nlohmann::json& request) { return nlohmann::json::parse(probe_grammar_json_line(request.dump())); }

const nlohmann::json kTwoProperties = {{"type", "object"},
                                       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "boolean"}}}}},
                                       {"required", {"a", "b"}},
                                       {"additionalProperties", false}};

TEST(GrammarProbeTest, SamplesAreSentencesAndTextsAreJudged) {
  const nlohmann::json a = ask({{"kind", "regex"}, {"text", "ab+"}, {"samples", 5}, {"texts", {"abbb", "a", "ba"}}});
  ASSERT_TRUE(a["ok"].get<bool>()) << a.dump();
  ASSERT_EQ(a["samples"].size(), 5u);
  for (const auto& s : a["samples"]) EXPECT_EQ(s.get<std::string>().rfind("ab", 0), 0u) << s;
  EXPECT_EQ(a["accepted"], nlohmann::json({true, false, false}));
}

TEST(GrammarProbeTest, PropertyOrderFollowsTheSchemaUnlessAnyOrderIsAsked) {
  // nlohmann::json sorts keys, so the schema's properties come as a, b; "b" first is the other order.
  const nlohmann::json texts = {R"({"a":1,"b":true})", R"({"b":true,"a":1})", R"({"a":1})"};
  const nlohmann::json in_order = ask({{"schema", kTwoProperties}, {"texts", texts}});
  ASSERT_TRUE(in_order["ok"].get<bool>()) << in_order.dump();
  EXPECT_EQ(in_order["accepted"], nlohmann::json({true, false, false}));
  const nlohmann::json any = ask({{"schema", kTwoProperties}, {"texts", texts}, {"any_property_order", true}});
  ASSERT_TRUE(any["ok"].get<bool>()) << any.dump();
  EXPECT_EQ(any["accepted"], nlohmann::json({true, true, false})) << "any order, every required one still present";
}

// "dialect": the draft of a schema without $schema (the JSON Schema Test Suite's folders): draft-07 ignores the
// keywords beside a $ref, 2020-12 applies them.
TEST(GrammarProbeTest, DialectReadsTheSchemaInThatDraft) {
  const nlohmann::json schema = {{"definitions", {{"a", {{"type", "array"}}}}},
                                 {"$ref", "#/definitions/a"},
                                 {"maxItems", 1}};
  const nlohmann::json texts = {"[1,2]", "[1]", "2"};
  const nlohmann::json draft7 = ask({{"schema", schema}, {"texts", texts}, {"dialect", "draft7"}});
  ASSERT_TRUE(draft7["ok"].get<bool>()) << draft7.dump();
  EXPECT_EQ(draft7["accepted"], nlohmann::json({true, true, false}));
  const nlohmann::json later = ask({{"schema", schema}, {"texts", texts}, {"dialect", "draft2020-12"}});
  ASSERT_TRUE(later["ok"].get<bool>()) << later.dump();
  EXPECT_EQ(later["accepted"], nlohmann::json({false, true, false}));
}

TEST(GrammarProbeTest, BadRequestsAreAnswersNamingTheField) {
  for (const auto& [request, field] :
       std::vector<std::pair<std::string, std::string>>{{"not json", "not JSON"},
                                                        {"[1]", "JSON object"},
                                                        {R"({"kind": "nope"})", "unknown kind"},
                                                        {R"({"kind": "regex", "text": "a", "samples": -1})", "samples"},
                                                        {R"({"schema": {}, "any_property_order": 1})", "any_property_order"},
                                                        {R"({"schema": {}, "dialect": "draft-07"})", "dialect"},
                                                        {R"({"kind": "regex", "text": "a", "texts": [1]})", "texts"}}) {
    const nlohmann::json a = nlohmann::json::parse(probe_grammar_json_line(request));
    EXPECT_FALSE(a["ok"].get<bool>()) << request;
    EXPECT_NE(a["error"].get<std::string>().find(field), std::string::npos) << a.dump();
  }
}

}  // namespace
}  // namespace pagoda::grammar
