// Property test of the JSON Schema path end to end (json_schema_to_grammar -> CompiledGrammar -> GrammarMatcher):
// random schemas over the supported keywords, random walks that choose only tokens the mask allows (a random
// vocabulary of JSON-ish pieces, steering towards the end after a while, as a sampler under a token budget would);
// every completed output must parse as JSON and validate (schema_validator.h), and on the first steps of each walk
// the mask must equal a brute-force check.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_converter.h"
#include "schema_validator.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;

class SchemaGenerator {
 public:
  explicit SchemaGenerator(uint64_t seed) : rng_(seed) {}

  json schema() {
    defs_ = json::object();
    json s = node(0);
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  json node(int depth) {
    const int kinds = depth >= 3 ? 6 : 11;
    switch (pick(kinds)) {
      case 0: {
        json s = {{"type", "string"}};
        switch (pick(4)) {
          case 0:
            s["maxLength"] = pick(4) + 1;
            s["minLength"] = pick(2);
            break;
          case 1:
            s["pattern"] = std::vector<std::string>{"^[a-c]+$", "^x\\d{2}$", "b", "^(yes|no)$"}[size_t(pick(4))];
            break;
          case 2:
            s["format"] =
                std::vector<std::string>{"date", "time", "date-time", "uuid", "email", "ipv4"}[size_t(pick(6))];
            break;
          default: break;
        }
        return s;
      }
      case 1: {
        json s = {{"type", "integer"}};
        if (coin()) s["minimum"] = pick(200) - 100;
        if (coin()) s["maximum"] = s.value("minimum", -100) + pick(300);
        if (coin(0.2)) s["exclusiveMaximum"] = s.value("maximum", 0) + 5;
        return s;
      }
      case 2: {
        json s = {{"type", "number"}};
        if (coin()) s["minimum"] = pick(10) - 5;
        if (coin()) s["exclusiveMaximum"] = s.value("minimum", -5) + 1 + pick(10);
        return s;
      }
      case 3: return {{"type", std::vector<std::string>{"boolean", "null"}[size_t(pick(2))]}};
      case 4: return {{"enum", {"red", "green", 3, nullptr, json::array({1, 2}), json{{"k", true}}}}};
      case 5: return {{"const", std::vector<std::string>{"on", "off", "é\"\\"}[size_t(pick(3))]}};
      case 6:
      case 7: {
        json s = {{"type", "object"}, {"properties", json::object()}};
        const int n = pick(4) + 1;
        std::vector<std::string> required;
        for (int i = 0; i < n; ++i) {
          const std::string key = std::string(1, char('a' + i)) + (coin(0.2) ? "\"q" : "");
          s["properties"][key] = node(depth + 1);
          if (coin()) required.push_back(key);
        }
        if (!required.empty()) s["required"] = required;
        switch (pick(4)) {
          case 0: s["additionalProperties"] = false; break;
          case 1: s["additionalProperties"] = {{"type", "integer"}}; break;
          default: break;
        }
        return s;
      }
      case 8: {
        json s = {{"type", "array"}};
        if (coin()) {
          s["prefixItems"] = json::array({node(depth + 1), node(depth + 1)});
          if (coin()) s["items"] = node(depth + 1);
        } else {
          s["items"] = node(depth + 1);
        }
        if (coin()) s["minItems"] = pick(3);
        if (coin()) s["maxItems"] = s.value("minItems", 0) + pick(4);
        return s;
      }
      case 9: return {{"anyOf", json::array({node(depth + 1), node(depth + 1)})}};
      default: {
        // A recursive definition: a linked list of the node type.
        const std::string name = "d" + std::to_string(defs_.size());
        defs_[name] = {
            {"type", "object"},
            {"properties",
             {{"v", node(depth + 1)}, {"next", {{"anyOf", {{{"$ref", "#/$defs/" + name}}, {{"type", "null"}}}}}}}},
            {"required", {"next"}}};
        return {{"$ref", "#/$defs/" + name}};
      }
    }
  }

  std::mt19937_64 rng_;
  json defs_;
};

std::shared_ptr<const TokenVocabulary> json_vocab() {
  std::vector<std::string> pieces = {
      "{",       "}",    "[",   "]",   ",",   ":",     "\"", " ",   "\n", "  ",   "\\",   "\\\"",   "\\n",
      "\\u00e9", "{\"",  "\":", "\",", "\"}", "\"]",   "},", "],",  ", ", ": ",   "\": ", "\", \"", "true",
      "false",   "null", "tr",  "ue",  "nu",  "ll",    "-",  ".",   "e",  "E",    "+",    "0",      "1",
      "2",       "5",    "9",   "12",  "00",  "3.",    "-1", "a",   "b",  "c",    "x",    "y",      "z",
      "ab",      "abc",  "yes", "no",  "red", "green", "on", "off", "é",  "\xC3", "\xA9", "q",      "k",
      "v",       "next", "d",   "T",   "Z",   "@",     "-0", "20",  "02", ":3",   "a@",   "b.c",    "é\\\"\\\\"};
  for (int b = 0x20; b < 0x7F; ++b) pieces.push_back(std::string(1, char(b)));
  pieces.push_back("");  // a control token
  pieces.push_back("");  // the stop token
  return std::make_shared<const TokenVocabulary>(std::move(pieces), std::vector<TokenId>{TokenId(pieces.size() - 1)});
}

std::vector<TokenId> allowed(const std::vector<uint32_t>& mask, int32_t n) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < n; ++id) {
    if (mask[size_t(id) >> 5] >> (id & 31) & 1) ids.push_back(id);
  }
  return ids;
}

void random_walks_produce_valid_json(const JsonGrammarOptions& options) {
  const auto vocab = json_vocab();
  const TokenId stop = vocab->stop_ids()[0];
  SchemaGenerator gen(2024);
  std::mt19937_64 rng(7);
  int32_t num_outputs = 0, num_schemas = 0;
  for (int32_t s = 0; s < 100; ++s) {
    const json schema = gen.schema();
    Result<Grammar> g = json_schema_to_grammar(schema, options);
    if (!g.ok()) {
      // Random bounds can make a schema unsatisfiable; anything else is a bug.
      EXPECT_NE(g.error().find("matches no string"), std::string::npos) << g.error() << "\n" << schema.dump();
      continue;
    }
    ++num_schemas;
    auto cg = std::make_shared<const CompiledGrammar>(std::move(g).value(), vocab);
    for (int32_t walk = 0; walk < 2; ++walk) {
      GrammarMatcher m(cg);
      std::string text;
      std::vector<uint32_t> mask(vocab->mask_words());
      bool done = false;
      for (int32_t step = 0; step < 400 && !done; ++step) {
        m.fill_mask(mask);
        std::vector<TokenId> ids = allowed(mask, vocab->vocab_size());
        ASSERT_FALSE(ids.empty()) << "no token allowed after '" << text << "' under " << schema.dump();
        if (step < 3) {
          for (TokenId id = 0; id < vocab->vocab_size(); ++id) {
            GrammarMatcher copy(m);
            ASSERT_EQ(copy.accept_token(id), bool(mask[size_t(id) >> 5] >> (id & 31) & 1))
                << "token '" << vocab->token_bytes(id) << "' after '" << text << "' under " << schema.dump();
          }
        }
        TokenId next;
        if (step >= 30) {  // head for the end: the allowed token that leaves the shortest completion
          if (m.can_end()) {
            next = stop;
          } else {
            uint64_t best = ~uint64_t(0);
            next = ids[0];
            for (const TokenId id : ids) {
              GrammarMatcher copy(m);
              copy.accept_token(id);
              if (copy.min_bytes_to_complete() < best) {
                best = copy.min_bytes_to_complete();
                next = id;
              }
            }
          }
        } else {
          next = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
        }
        ASSERT_TRUE(m.accept_token(next));
        text += vocab->token_bytes(next);  // "" for the stop token
        done = next == stop || m.is_complete();
      }
      ASSERT_TRUE(done) << "no end after 400 tokens: '" << text << "' under " << schema.dump();
      const json value = json::parse(text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "not JSON: '" << text << "' under " << schema.dump();
      EXPECT_EQ(testing::validate(schema, value), "") << text << "\nunder " << schema.dump();
      EXPECT_EQ(testing::duplicate_listed_key(text, testing::listed_property_names(schema)), "")
          << text << "\nunder " << schema.dump();
      ++num_outputs;
    }
  }
  EXPECT_GT(num_schemas, 70);
  EXPECT_EQ(num_outputs, 2 * num_schemas);
}

TEST(JsonSchemaProperty, RandomSchemasRandomWalksProduceValidJson) { random_walks_produce_valid_json({}); }

TEST(JsonSchemaProperty, RandomSchemasRandomWalksProduceValidJsonInAnyPropertyOrder) {
  random_walks_produce_valid_json({.any_property_order = true});
}

}  // namespace
}  // namespace pagoda::grammar
