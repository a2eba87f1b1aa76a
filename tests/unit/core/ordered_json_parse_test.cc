// parse_ordered_json (src/core/ordered_json_parse.h): the same tree as nlohmann's own ordered parse (key order,
// duplicate keys, every value kind, nesting), errors as Status, and an object of many keys.
#include "core/ordered_json_parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

namespace pagoda {
namespace {

using ::testing::HasSubstr;
using ojson = nlohmann::ordered_json;

void expect_same_as_nlohmann(const std::string& text) {
  Result<ojson> ours = parse_ordered_json(text);
  ASSERT_TRUE(ours.ok()) << ours.error() << " for " << text;
  const ojson theirs = ojson::parse(text);
  EXPECT_EQ(ours->dump(), theirs.dump()) << text;  // dump() writes keys in their stored order
}

TEST(OrderedJsonParseTest, KeepsKeyOrderAndEveryValueKind) {
  expect_same_as_nlohmann(R"({"z":1,"a":-2,"m":3.5,"b":true,"c":null,"d":"s\u00e9","e":18446744073709551615})");
  expect_same_as_nlohmann(R"([{"y":[],"x":{}},[[1,{"q":[2]}]],"",0,-0.0,1e300])");
  expect_same_as_nlohmann(R"("just a string")");
  expect_same_as_nlohmann("42");
  expect_same_as_nlohmann(R"({"a":{"b":{"c":[{"d":[{"e":{}}]}]}},"f":[]})");
  Result<ojson> order = parse_ordered_json(R"({"b":1,"a":2})");
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->begin().key(), "b");
}

TEST(OrderedJsonParseTest, ADuplicateKeyKeepsItsFirstPlaceAndItsLastValue) {
  expect_same_as_nlohmann(R"({"a":1,"b":2,"a":{"x":[3]},"c":4,"b":5})");
  Result<ojson> dup = parse_ordered_json(R"({"a":1,"b":2,"a":3})");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->dump(), R"({"a":3,"b":2})");
}

TEST(OrderedJsonParseTest, RandomDocumentsMatchNlohmannsTree) {
  std::mt19937_64 rng(7);
  std::function<ojson(int)> random_value = [&](int depth) -> ojson {
    const int kind = std::uniform_int_distribution<int>(0, depth > 4 ? 3 : 5)(rng);
    switch (kind) {
      case 0: return ojson(std::uniform_int_distribution<int64_t>(-1000, 1000)(rng));
      case 1: return ojson(std::uniform_real_distribution<double>(-1, 1)(rng));
      case 2: return ojson(std::string(std::uniform_int_distribution<size_t>(0, 3)(rng), 'k'));
      case 3: return ojson(nullptr);
      case 4: {
        ojson a = ojson::array();
        for (int i = std::uniform_int_distribution<int>(0, 4)(rng); i > 0; --i) a.push_back(random_value(depth + 1));
        return a;
      }
      default: {
        // Written as text so that duplicate keys reach the parser.
        return ojson::object();
      }
    }
  };
  for (int doc = 0; doc < 200; ++doc) {
    std::string text = "{";
    const int n = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < n; ++i) {
      if (i > 0) text += ",";
      text += "\"k" + std::to_string(std::uniform_int_distribution<int>(0, 6)(rng)) + "\":";
      text += random_value(0).dump();
    }
    text += "}";
    expect_same_as_nlohmann(text);
  }
}

TEST(OrderedJsonParseTest, InvalidTextIsAnErrorNamingWhere) {
  Result<ojson> bad = parse_ordered_json(R"({"a": [1, 2)");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("invalid JSON: parse error at line 1"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(parse_ordered_json("").ok());
  EXPECT_FALSE(parse_ordered_json(R"({"a":1} x)").ok());
  EXPECT_FALSE(parse_ordered_json("\"\xff\"").ok());
  const std::string whole = R"({"a":[1,{"b":"c"}]})";
  for (size_t cut = 0; cut < whole.size(); ++cut) EXPECT_FALSE(parse_ordered_json(whole.substr(0, cut)).ok()) << cut;
}

TEST(OrderedJsonParseTest, AnObjectOfManyKeysKeepsThemAllInOrder) {
  constexpr int kKeys = 50000;
  std::string text = "{";
  for (int i = 0; i < kKeys; ++i) text += (i ? ",\"d" : "\"d") + std::to_string(kKeys - i) + "\":" + std::to_string(i);
  text += "}";
  Result<ojson> many = parse_ordered_json(text);
  ASSERT_TRUE(many.ok());
  ASSERT_EQ(many->size(), size_t(kKeys));
  int i = 0;
  for (auto it = many->begin(); it != many->end(); ++it, ++i) {
    ASSERT_EQ(it.key(), "d" + std::to_string(kKeys - i));
    ASSERT_EQ(it.value(), i);
  }
}

}  // namespace
}  // namespace pagoda
