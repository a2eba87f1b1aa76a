// Tests for json_schema_to_grammar's long string lengths (minLength/maxLength from 2048 on, counted in blocks of a
// rule instead of copied) and its formats: JSON Schema formats it has no regex for are refused by name, names JSON
// Schema does not define are annotations, as validators treat them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "grammar/json_schema_converter.h"
#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::matches;

std::shared_ptr<const CompiledGrammar> compile_lengths(const json& schema) {
  Result<Grammar> g = json_schema_to_grammar(schema);
  EXPECT_TRUE(g.ok()) << g.error() << "\n" << schema.dump();
  if (!g.ok()) return nullptr;
  return testing::with_bytes(std::move(g).value());
}

std::string quoted(size_t n, const std::string& unit = "a") {
  std::string s = "\"";
  for (size_t i = 0; i < n; ++i) s += unit;
  return s + "\"";
}

TEST(JsonSchemaLengths, MaxLengthAboveTenThousandIsExactAndSmall) {
  Result<Grammar> g = json_schema_to_grammar(json{{"type", "string"}, {"maxLength", 32767}});
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LT(g->states.size(), 40000u);  // not one copy of a character's automaton per allowed character
  auto cg = testing::with_bytes(std::move(g).value());
  for (const size_t n : {0, 1, 255, 256, 257, 511, 512, 32511, 32512, 32766, 32767})
    EXPECT_TRUE(matches(cg, quoted(n))) << n;
  EXPECT_FALSE(matches(cg, quoted(32768)));
  EXPECT_FALSE(matches(cg, quoted(40000)));
  // Characters, not bytes: escapes and multi-byte code points count once each.
  EXPECT_TRUE(matches(cg, quoted(32767, "\\n")));
  EXPECT_TRUE(matches(cg, quoted(32767, "\xc3\xa9")));
  EXPECT_FALSE(matches(cg, quoted(32768, "\\n")));
}

TEST(JsonSchemaLengths, LengthsFromTwoThousandAndFortyEightAreCountedInBlocks) {
  Result<Grammar> g = json_schema_to_grammar(json{{"type", "string"}, {"minLength", 22}, {"maxLength", 4096}});
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_LT(g->states.size(), 30000u);  // not 4096 characters copied inline
  auto cg = testing::with_bytes(std::move(g).value());
  for (const size_t n : {22, 255, 256, 257, 2048, 3839, 3840, 4095, 4096}) EXPECT_TRUE(matches(cg, quoted(n))) << n;
  for (const size_t n : {0, 21, 4097}) EXPECT_FALSE(matches(cg, quoted(n))) << n;
  // Bounds on either side of where counting in blocks starts, and on a block's edge.
  for (const auto& [lo, hi] : {std::pair<size_t, size_t>{2047, 2048}, {2048, 2303}, {2049, 2304}, {2047, 2049}}) {
    Result<Grammar> h = json_schema_to_grammar(json{{"type", "string"}, {"minLength", lo}, {"maxLength", hi}});
    ASSERT_TRUE(h.ok()) << h.error();
    auto ch = testing::with_bytes(std::move(h).value());
    for (const size_t n : {lo - 1, lo, hi, hi + 1})
      EXPECT_EQ(matches(ch, quoted(n)), n >= lo && n <= hi) << lo << ".." << hi << " length " << n;
  }
  EXPECT_TRUE(matches(cg, quoted(4096, "\\n")));
  EXPECT_TRUE(matches(cg, quoted(4096, "\xc3\xa9")));
  EXPECT_FALSE(matches(cg, quoted(4097, "\xc3\xa9")));
}

TEST(JsonSchemaLengths, MinAndMaxLengthTogether) {
  auto both = compile_lengths({{"type", "string"}, {"minLength", 10300}, {"maxLength", 20000}});
  ASSERT_TRUE(both);
  for (const size_t n : {0, 10299, 20001}) EXPECT_FALSE(matches(both, quoted(n))) << n;
  for (const size_t n : {10300, 10301, 10495, 10496, 10497, 15000, 19967, 19968, 20000})
    EXPECT_TRUE(matches(both, quoted(n))) << n;
  auto same_block = compile_lengths({{"type", "string"}, {"minLength", 10250}, {"maxLength", 10260}});
  ASSERT_TRUE(same_block);
  EXPECT_FALSE(matches(same_block, quoted(10249)));
  EXPECT_TRUE(matches(same_block, quoted(10250)));
  EXPECT_TRUE(matches(same_block, quoted(10260)));
  EXPECT_FALSE(matches(same_block, quoted(10261)));
  auto at_least = compile_lengths({{"type", "string"}, {"minLength", 10001}});
  ASSERT_TRUE(at_least);
  EXPECT_FALSE(matches(at_least, quoted(10000)));
  EXPECT_TRUE(matches(at_least, quoted(10001)));
  EXPECT_TRUE(matches(at_least, quoted(30000)));
  auto none = json_schema_to_grammar(json{{"type", "string"}, {"minLength", 20000}, {"maxLength", 10001}});
  EXPECT_FALSE(none.ok());
}

TEST(JsonSchemaLengths, LimitsStillRefusedByName) {
  for (const json& schema : {json{{"type", "string"}, {"maxLength", 2000000}},
                             json{{"type", "string"}, {"maxLength", 20000}, {"pattern", "^a+$"}}}) {
    Result<Grammar> g = json_schema_to_grammar(schema);
    ASSERT_FALSE(g.ok()) << schema.dump();
    EXPECT_NE(g.error().find("enforceable limit"), std::string::npos) << g.error();
  }
}

TEST(JsonSchemaFormats, UnknownNamesAreAnnotationsDefinedOnesWithoutRegexAreRefused) {
  for (const char* name : {"chickenbutt", "html-selector", "byte", ""}) {
    auto g = compile_lengths({{"type", "string"}, {"format", name}});
    ASSERT_TRUE(g) << name;
    EXPECT_TRUE(matches(g, R"("anything at all")")) << name;
    EXPECT_FALSE(matches(g, "1")) << name;
  }
  // Beside other keywords, the unknown format constrains nothing and the others still do.
  auto bounded = compile_lengths({{"type", "string"}, {"format", "topic"}, {"maxLength", 3}});
  EXPECT_TRUE(matches(bounded, R"("abc")"));
  EXPECT_FALSE(matches(bounded, R"("abcd")"));
  auto listed = compile_lengths({{"enum", {"x", "y"}}, {"format", "code"}});
  EXPECT_TRUE(matches(listed, R"("x")"));
  // Without a type, an unknown format is an annotation: any value; a defined one holds strings only.
  auto untyped = compile_lengths({{"format", "positiveInteger"}});
  for (const char* ok : {"2", R"("s")", "[1]", "null"}) EXPECT_TRUE(matches(untyped, ok)) << ok;
  auto untyped_date = compile_lengths({{"format", "date"}});
  for (const char* ok : {"2", R"("2024-02-29")", "[1]", "null"}) EXPECT_TRUE(matches(untyped_date, ok)) << ok;
  EXPECT_FALSE(matches(untyped_date, R"("s")"));
  // A uri's authority may be empty (file:///path), as RFC 3986 allows.
  auto uri = compile_lengths({{"type", "string"}, {"format", "uri"}});
  EXPECT_TRUE(matches(uri, R"("file:///path/to/file1.js")"));
  EXPECT_TRUE(matches(uri, R"("https://example.com:8080/a?b=c#d")"));
  EXPECT_FALSE(matches(uri, R"("file:/x y")"));
  for (const char* name : {"uri-reference", "regex", "duration", "json-pointer"}) {
    Result<Grammar> g = json_schema_to_grammar(json{{"type", "string"}, {"format", name}});
    ASSERT_FALSE(g.ok()) << name;
    EXPECT_NE(g.error().find(std::string("format '") + name + "' is not supported"), std::string::npos) << g.error();
  }
}

// Each format is its RFC's grammar: the corners the JSON Schema Test Suite checks, valid and invalid.
TEST(JsonSchemaFormats, FormatsFollowTheirRfcs) {
  auto dt = compile_lengths({{"type", "string"}, {"format", "date-time"}});
  for (const char* ok : {R"("1963-06-19t08:30:06.283185z")", R"("1985-04-12T00:59:59.999999999999999Z")",
                         R"("1937-01-01T12:00:27.87+00:20")"})
    EXPECT_TRUE(matches(dt, ok)) << ok;
  for (const char* bad : {R"("1963-06-19T08:30:06.28123+01:00Z")", R"("1985-04-12T23:20:50+01")",
                          R"("1990-12-31T15:59:59-24:00")", R"("1963-06-19T08:30:06.Z")", R"("1998-12-31T23:59:61Z")",
                          R"("1985-04-12T00:59:59.99999999999999999Z")"})  // 17 digits: past the bound
    EXPECT_FALSE(matches(dt, bad)) << bad;
  auto time = compile_lengths({{"type", "string"}, {"format", "time"}});
  EXPECT_TRUE(matches(time, R"("08:30:06z")"));
  EXPECT_FALSE(matches(time, R"("12:00:00")"));
  EXPECT_FALSE(matches(time, R"("22:59:60Z")"));
  // RFC 5321: quoted local parts (a quote and a backslash escaped in JSON and in the address) and address literals.
  auto email = compile_lengths({{"type", "string"}, {"format", "email"}});
  for (const char* ok : {R"("\"joe bloggs\"@example.com")", R"("\"joe..bloggs\"@example.com")",
                         R"("\"a\\\"b\"@example.com")", R"("joe.bloggs@[127.0.0.1]")", R"("joe.bloggs@[IPv6:::1]")",
                         R"("x@[IPv6:2001:db8::192.168.0.1]")", R"("te~st@example.com")"})
    EXPECT_TRUE(matches(email, ok)) << ok;
  for (const char* bad : {R"("joe bloggs@example.com")", R"("\"joe\"bloggs\"@example.com")", R"("a@[127.0.0.300]")",
                          R"("a@[::1]")", R"("te..st@example.com")", R"("a@invalid=domain.com")", R"("\"a\"b@x.com")"})
    EXPECT_FALSE(matches(email, bad)) << bad;
  // RFC 3986: every hier-part form, userinfo, IP literals, an empty port.
  auto uri = compile_lengths({{"type", "string"}, {"format", "uri"}});
  for (const char* ok : {R"("mailto:John.Doe@example.com")", R"("urn:oasis:names:specification:docbook:dtd:xml:4.1.2")",
                         R"("tel:+1-816-555-1212")", R"("news:comp.infosystems.www.servers.unix")",
                         R"("ldap://[2001:db8::7]/c=GB?objectClass?one")", R"("http://[v1.fe80::a+en1]/")",
                         R"("http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com")", R"("x:")", R"("http://h:/p")",
                         R"("http://999.999.999.999/")"})
    EXPECT_TRUE(matches(uri, ok)) << ok;
  for (const char* bad : {R"("//foo.bar/?baz=qux#quux")", R"("abc")", R"("http://[::ffff:01.2.3.4]")",
                          R"("http:/[::1]")", R"("http://example.com/%6G")", R"("http://example.com:abc/path")",
                          R"("https://[@example.org/test.txt")", R"("1http://example.com")", R"("http://a b")"})
    EXPECT_FALSE(matches(uri, bad)) << bad;
  // RFC 4291's text forms (RFC 3986's IPv6address): "::" once, an IPv4 tail, hex groups of 1-4 digits; no zone id.
  auto ipv6 = compile_lengths({{"type", "string"}, {"format", "ipv6"}});
  for (const char* ok : {R"("::1")", R"("::")", R"("1:2:3:4:5:6:7:8")", R"("fe80::0202:b3ff:fe1e:8329")",
                         R"("::ffff:192.168.0.1")", R"("1::d6:192.168.0.1")", R"("1:2:3:4:5:6:1.2.3.4")",
                         R"("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789")", R"("1::")"})
    EXPECT_TRUE(matches(ipv6, ok)) << ok;
  for (const char* bad : {R"("12345::")", R"("1:1:1:1:1:1:1:1:1")", R"("1::2::3")", R"("::laptop")",
                          R"("fe80::a%eth1")", R"("1::2:192.168.256.1")", R"("1:2:3:4:5:6:7:1.2.3.4")",
                          R"(" ::1")", R"("::1 ")", R"(":2:3:4:5:6:7:8")", R"("1.2.3.4")", R"("")"})
    EXPECT_FALSE(matches(ipv6, bad)) << bad;
}

// Draft-04/06 host names are RFC 1123's: any label, xn-- punycode and "--" inside included; later drafts leave out
// IDNA's reserved labels (see JsonSchemaConverter.HostnamesLeaveOutReservedLabels).
TEST(JsonSchemaFormats, HostnameFollowsTheDialect) {
  for (const JsonSchemaDialect d : {JsonSchemaDialect::kDraft4, JsonSchemaDialect::kDraft6}) {
    JsonGrammarOptions options;
    options.dialect = d;
    Result<Grammar> g = json_schema_to_grammar(json{{"type", "string"}, {"format", "hostname"}}, options);
    ASSERT_TRUE(g.ok()) << g.error();
    auto host = testing::with_bytes(std::move(g).value());
    for (const char* ok : {R"("xn--4gbwdl.xn--wgbh1c")", R"("ab--cd.example")", R"("a.b")"})
      EXPECT_TRUE(matches(host, ok)) << ok;
    for (const char* bad : {R"("-a")", R"("a_b")", R"("a-")", R"("a..b")"}) EXPECT_FALSE(matches(host, bad)) << bad;
  }
  Result<Grammar> later = json_schema_to_grammar(
      json{{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "string"}, {"format", "hostname"}});
  ASSERT_TRUE(later.ok()) << later.error();
  EXPECT_FALSE(matches(testing::with_bytes(std::move(later).value()), R"("ab--cd.example")"));
}

}  // namespace
}  // namespace pagoda::grammar
