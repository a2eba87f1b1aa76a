// json_schema_to_grammar / json_object_grammar (json_schema_converter.h). One SchemaConverter per schema: each
// schema node becomes an expression inlined into its parent's rule, except $ref targets (one rule each, which is
// what makes recursion possible), the shared free-form pieces (string, number, integer, any value), a sub-schema
// with objects or arrays in it met a second time (annotations aside) or an array item counted by minItems/maxItems
// (one rule each, called from every place: see convert_schema).
#include "grammar/json_schema_converter.h"

#include <fmt/format.h>

#include <bit>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "core/ordered_json_parse.h"
#include "grammar/json_number_range.h"
#include "grammar/json_string_chars.h"
#include "grammar/regex_parser.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;
using Expr = GrammarBuilder::Expr;

constexpr int32_t kMaxSchemaDepth = 128;
constexpr uint64_t kMaxCount = 10000;       // the largest enforceable minItems/maxItems/minLength/maxLength
constexpr size_t kInlineMemberLimit = 400;  // optional-property chains inlined up to this size, rules beyond
// An unbounded integer (or a free number's integer part): up to 19 digits, every 64-bit integer's (an id or a count
// a document carries whole), still a bound a model cannot loop past.
constexpr uint32_t kFreeIntegerDigits = 19;

const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description",      "default",         "examples",      "$comment",    "$schema",       "$id",
    "id",       "$anchor",          "deprecated",      "readOnly",      "writeOnly",   "$defs",         "definitions",
    "nullable", "contentMediaType", "contentEncoding", "contentSchema", "$vocabulary", "discriminator", "strict"};
// Internal keywords a `not` leaves on a string schema: its content must not match these patterns, nor be one of
// these strings (the complements of `pattern` and of a string enum).
constexpr const char* kNotPatterns = "$pagoda:notPatterns";
constexpr const char* kNotStrings = "$pagoda:notStrings";
// Internal keyword: an object's dependencies of names on names ({"trigger": ["needed", ...]}), which an object whose
// members may come in any order enforces in the sets of members it tracks (see convert_object).
constexpr const char* kNeeds = "$pagoda:needs";
const std::set<std::string, std::less<>> kUnsupported = {"unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
                                                         "$recursiveRef",         "$dynamicAnchor",   "$recursiveAnchor"};
constexpr size_t kMaxPatterns = 4;               // patternProperties: each subset of patterns is one kind of name
// A sub-schema met again becomes a rule from this size of its normalized text (smaller ones are copied).
constexpr size_t kShareSchemaFromBytes = 48;
constexpr size_t kMaxSchemaKeyBytes = size_t(1) << 18;   // the longest normalized text shared
constexpr uint64_t kMaxSchemaKeyTotal = uint64_t(1) << 26;  // normalized text written per conversion
constexpr size_t kMaxAnyOfProduct = 64;          // allOf of two anyOf lists: their pairs, up to this many
constexpr size_t kMaxDependencies = 6;           // each is a choice of two, combined as such pairs are
constexpr uint64_t kMaxComplementSteps = 20000;  // schema nodes one conversion may complement
// any_property_order: one rule per set of listed properties already written, so an object of n properties costs
// 2^n rules of about n - |set| + 2 states; bounded per object and per schema (the rest keep `properties` order).
// The per-object bound is also the matcher's: a token that runs past the object's end is checked against every
// caller chain (state_token_mask.h), and the sets' rules call one another along every order written, n! chains.
constexpr size_t kAnyOrderMaxMembers = 7;
constexpr uint64_t kAnyOrderStateBudget = uint64_t(1) << 15;
// uniqueItems: items of at most this many distinct values, and at most this many sets of them an array may hold
// (one rule each); their states count against kAnyOrderStateBudget too.
constexpr size_t kUniqueMaxValues = 24;
constexpr uint64_t kUniqueMaxSets = 4096;
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength",  "pattern",
                                                            "format",    kNotPatterns, kNotStrings};
const std::vector<std::string> kAllTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};
// The one type each keyword constrains (values of other types satisfy it); the keywords this converter knows
// beside these are the generic ones (type, enum, const, the applicators, $ref).
const std::map<std::string, std::string, std::less<>> kKeywordType = {
    {"properties", "object"},
    {"required", "object"},
    {"additionalProperties", "object"},
    {"minProperties", "object"},
    {"maxProperties", "object"},
    {"patternProperties", "object"},
    {"propertyNames", "object"},
    {"dependencies", "object"},
    {"dependentRequired", "object"},
    {"dependentSchemas", "object"},
    {"unevaluatedProperties", "object"},
    {"items", "array"},
    {"prefixItems", "array"},
    {"additionalItems", "array"},
    {"minItems", "array"},
    {"maxItems", "array"},
    {"uniqueItems", "array"},
    {"contains", "array"},
    {"minContains", "array"},
    {"maxContains", "array"},
    {"unevaluatedItems", "array"},
    {"minLength", "string"},
    {"maxLength", "string"},
    {"pattern", "string"},
    {"format", "string"},
    {kNotPatterns, "string"},
    {kNotStrings, "string"},
    {kNeeds, "object"},
    {"minimum", "number"},
    {"maximum", "number"},
    {"exclusiveMinimum", "number"},
    {"exclusiveMaximum", "number"},
    {"multipleOf", "number"},
};
const std::set<std::string, std::less<>> kGenericKeywords = {
    "type", "enum", "const",       "allOf",         "anyOf",          "oneOf",           "not", "if", "then",
    "else", "$ref", "$dynamicRef", "$recursiveRef", "$dynamicAnchor", "$recursiveAnchor"};

// The grammars of the supported formats as regexes, each its RFC's ABNF (written for JSON string content; all
// ASCII, nothing to escape). The pieces several formats share come first.
namespace format_regex {
// RFC 3339 full-date, days per month and leap years included.
const std::string kDate =
    "([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
    "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)";
// RFC 3339 full-time, "Z" in either case (its section 5.6 note). Narrower in two corners: up to 16 fraction digits
// (as a free number's: a bound a model cannot loop past), and seconds stop at 59: a leap second is valid only at
// 23:59:60 UTC, which ties the local time to its offset minute by minute (an automaton of thousands of states).
const std::string kTime =
    "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,16})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
// RFC 3986's dec-octet, IPv4address, h16, ls32 and IPv6address (RFC 5321's address literals use the same).
const std::string kDecOctet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const std::string kIpv4 = "(" + kDecOctet + "\\.){3}" + kDecOctet;
const std::string kH16 = "[0-9A-Fa-f]{1,4}";
const std::string kLs32 = "(" + kH16 + ":" + kH16 + "|" + kIpv4 + ")";
const std::string kIpv6 = "((" + kH16 + ":){6}" + kLs32 +                               //
                          "|::(" + kH16 + ":){5}" + kLs32 +                              //
                          "|(" + kH16 + ")?::(" + kH16 + ":){4}" + kLs32 +               //
                          "|((" + kH16 + ":){0,1}" + kH16 + ")?::(" + kH16 + ":){3}" + kLs32 +  //
                          "|((" + kH16 + ":){0,2}" + kH16 + ")?::(" + kH16 + ":){2}" + kLs32 +  //
                          "|((" + kH16 + ":){0,3}" + kH16 + ")?::" + kH16 + ":" + kLs32 +       //
                          "|((" + kH16 + ":){0,4}" + kH16 + ")?::" + kLs32 +                    //
                          "|((" + kH16 + ":){0,5}" + kH16 + ")?::" + kH16 +                     //
                          "|((" + kH16 + ":){0,6}" + kH16 + ")?::)";
// RFC 3986's unreserved and sub-delims characters (a class body), pct-encoded, pchar, a query's or fragment's.
const std::string kUnreservedSubDelims = "A-Za-z0-9._~!$&'()*+,;=";
const std::string kPercent = "%[0-9A-Fa-f]{2}";
const std::string kPchar = "([" + kUnreservedSubDelims + ":@-]|" + kPercent + ")";
const std::string kQuery = "([" + kUnreservedSubDelims + ":@/?-]|" + kPercent + ")*";
// RFC 3986 URI: scheme ":" hier-part ["?" query] ["#" fragment]; hier-part is "//" authority path-abempty,
// path-absolute, path-rootless or path-empty; a host is an IP-literal (IPv6 or IPvFuture) or a reg-name (of which
// IPv4address is a case).
const std::string kUri = "[A-Za-z][A-Za-z0-9+.-]*:"
                         "(//(([" + kUnreservedSubDelims + ":-]|" + kPercent + ")*@)?" +
                         "(\\[(" + kIpv6 + "|[Vv][0-9A-Fa-f]+\\.[" + kUnreservedSubDelims + ":-]+)\\]|([" +
                         kUnreservedSubDelims + "-]|" + kPercent + ")*)(:[0-9]*)?(/" + kPchar + "*)*" +
                         "|/(" + kPchar + "+(/" + kPchar + "*)*)?|" + kPchar + "+(/" + kPchar + "*)*)?" +
                         "(\\?" + kQuery + ")?(#" + kQuery + ")?";
// A host name label (RFC 1123: letters, digits, inner hyphens; at most 63).
const std::string kLabel = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
// RFC 5321 Mailbox: a Dot-string or Quoted-string local part; a domain of at least two labels, or an IPv4 or IPv6
// address literal.
const std::string kEmail = "([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
                           "|\"([ !#-\\[\\]-~]|\\\\[ -~])*\")@"
                           "((" + kLabel + "\\.)+" + kLabel + "|\\[" + kIpv4 + "\\]|\\[IPv6:" + kIpv6 + "\\])";
// Host names of up to 3 labels (so within a name's 253 characters). Draft-04/06 (RFC 1034/1123): any label. From
// draft-07 on (RFC 5890's rules too): none with "--" in its 3rd and 4th places, IDNA's reserved forms (xn-- A-labels
// among them), which only a punycode decoder could tell valid from not.
const std::string kHostnameRfc1123 = kLabel + "(\\." + kLabel + "){0,2}";
const std::string kIdnaLabel =
    "[A-Za-z0-9]([A-Za-z0-9]|[A-Za-z0-9-]([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]{0,59}[A-Za-z0-9]|-[A-Za-z0-9]([A-Za-"
    "z0-9-]{0,58}[A-Za-z0-9])?))?";
const std::string kHostnameIdna = kIdnaLabel + "(\\." + kIdnaLabel + "){0,2}";
std::string anchored(const std::string& body) { return "^(" + body + ")$"; }
}  // namespace format_regex

// The supported formats, by name (hostname: the draft-07 form; draft-04/06 take kHostnameRfc1123Regex).
const std::map<std::string, std::string, std::less<>> kFormats = {
    {"date", format_regex::anchored(format_regex::kDate)},
    {"time", format_regex::anchored(format_regex::kTime)},
    {"date-time", format_regex::anchored(format_regex::kDate + "[Tt]" + format_regex::kTime)},
    {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
    {"email", format_regex::anchored(format_regex::kEmail)},
    {"uri", format_regex::anchored(format_regex::kUri)},
    {"ipv6", format_regex::anchored(format_regex::kIpv6)},
    {"ipv4", "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"},
    {"hostname", format_regex::anchored(format_regex::kHostnameIdna)},
};
const std::string kHostnameRfc1123Regex = format_regex::anchored(format_regex::kHostnameRfc1123);

// Formats JSON Schema defines that kFormats lacks: refused, since a validator asserting formats checks them. Any
// other name is no JSON Schema format; validators ignore it (an annotation), and so does the grammar.
const std::set<std::string, std::less<>> kUnsupportedFormats = {
    "duration",      "idn-email",    "idn-hostname", "uri-reference",        "iri",
    "iri-reference", "uri-template", "json-pointer", "relative-json-pointer", "regex"};

// A string's length from kLongStringFrom on: blocks of kLengthBlock characters (one rule, called a counted number of
// times) and the rest, up to kMaxLongLength. Below it the characters are copied inline (about 25 automaton states
// each), which costs fewer states than the blocks' rule and two rests.
constexpr uint32_t kLengthBlock = 256;
constexpr uint64_t kLongStringFrom = 8 * kLengthBlock;
constexpr uint64_t kMaxLongLength = uint64_t(kLengthBlock) * 4096;

bool has_assertions(const json& s) {
  if (!s.is_object()) return true;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!kAnnotations.count(it.key())) return true;
  }
  return false;
}

// A schema every string satisfies (true, {}, {"type": "string"}, annotations aside): as `propertyNames`, which zod 4
// writes for every z.record(z.string(), ...), it asserts nothing (object keys are strings).
bool every_string_matches(const json& s) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object()) return false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it.key() == "type" && it.value() == "string") continue;
    if (!kAnnotations.count(it.key())) return false;
  }
  return true;
}

bool is_integral(const json& v) {
  return v.is_number_integer() || v.is_number_unsigned() ||
         (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

bool value_has_type(const json& v, std::string_view type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number() && is_integral(v);
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

std::string json_pointer_escape(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// The dialect a `$schema` URI names ("http://json-schema.org/draft-07/schema#" and its spellings), or nullopt.
std::optional<JsonSchemaDialect> dialect_of_uri(std::string_view uri) {
  for (const std::string_view scheme : {"https://", "http://"})
    if (uri.substr(0, scheme.size()) == scheme) uri.remove_prefix(scheme.size());
  if (!uri.empty() && uri.back() == '#') uri.remove_suffix(1);
  static const std::map<std::string, JsonSchemaDialect, std::less<>> kUris = {
      {"json-schema.org/draft-04/schema", JsonSchemaDialect::kDraft4},
      {"json-schema.org/draft-06/schema", JsonSchemaDialect::kDraft6},
      {"json-schema.org/draft-07/schema", JsonSchemaDialect::kDraft7},
      {"json-schema.org/draft/2019-09/schema", JsonSchemaDialect::kDraft2019_09},
      {"json-schema.org/draft/2020-12/schema", JsonSchemaDialect::kDraft2020_12}};
  auto it = kUris.find(uri);
  if (it == kUris.end()) return std::nullopt;
  return it->second;
}

JsonSchemaDialect dialect_of(const json& schema, JsonSchemaDialect fallback) {
  if (schema.is_object() && schema.contains("$schema") && schema["$schema"].is_string())
    if (std::optional<JsonSchemaDialect> d = dialect_of_uri(schema["$schema"].get<std::string>())) return *d;
  return fallback;
}

bool ref_overrides_siblings(JsonSchemaDialect d) {
  return d == JsonSchemaDialect::kDraft4 || d == JsonSchemaDialect::kDraft6 || d == JsonSchemaDialect::kDraft7;
}

// Draft-04/06/07: "All other properties in a $ref object MUST be ignored". Every schema of the document with a $ref
// keeps it alone, with its definitions (a $ref may still point into them). Schemas are reached through the keywords
// that hold them, never through a value (enum, const) or an unknown keyword.
void drop_ref_siblings(json& document) {
  static const std::set<std::string, std::less<>> kOne = {
      "not",          "if",           "then",          "else",          "additionalItems", "additionalProperties",
      "contains",     "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"};
  static const std::set<std::string, std::less<>> kList = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
  static const std::set<std::string, std::less<>> kMap = {"properties",       "patternProperties", "definitions",
                                                          "$defs",            "dependentSchemas",  "dependencies"};
  std::vector<json*> todo = {&document};
  while (!todo.empty()) {
    json& s = *todo.back();
    todo.pop_back();
    if (!s.is_object()) continue;
    if (s.contains("$ref")) {
      json kept = json::object();
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() == "$ref" || it.key() == "definitions" || it.key() == "$defs") kept[it.key()] = it.value();
      s = std::move(kept);
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      json& v = it.value();
      if (kOne.count(it.key()) && v.is_object()) todo.push_back(&v);
      if (kList.count(it.key()) && v.is_array())
        for (json& m : v) todo.push_back(&m);
      if (kMap.count(it.key()) && v.is_object())
        for (json& m : v) todo.push_back(&m);
    }
  }
}

struct Bounds {
  std::optional<NumberBound> lo, hi;
};

class SchemaConverter {
 public:
  SchemaConverter(const json& root, const JsonGrammarOptions& options, JsonSchemaDialect dialect)
      : root_(root), o_(options), dialect_(dialect) {}

  Result<Grammar> convert(const BuildLimits& limits) {
    const int32_t root = b_.add_rule("root");
    refs_["#"] = root;
    b_.set_body(root, convert_schema(root_, "#", 0, root));
    for (size_t converted = 0; !failed() && !pending_.empty(); ++converted) {
      if (converted % 256 == 0 && limits.should_stop && limits.should_stop())
        return make_error("the grammar's compile was stopped", StatusCode::kCancelled);
      const auto [rule, pointer] = pending_.back();
      pending_.pop_back();
      const json* target = resolve(pointer, pointer);
      b_.set_body(rule, target ? convert_schema(*target, pointer, 0, rule) : b_.nothing());
    }
    if (failed()) return make_error(*error_, StatusCode::kInvalidArgument);
    Result<Grammar> g = b_.build(root, limits);
    if (!g.ok()) return make_error("schema: " + g.error(), g.status().code());
    return g;
  }

  const JsonSchemaNotes& notes() const { return notes_; }

  Result<Grammar> any_object() {
    const int32_t root = b_.add_rule("root");
    b_.set_body(root, b_.rule_ref(object_any_rule()));
    Result<Grammar> g = b_.build(root);
    if (!g.ok()) return make_error("json_object: " + g.error(), StatusCode::kInvalidArgument);
    return g;
  }

 private:
  bool failed() const { return error_.has_value(); }
  // The regex of a supported format in this schema's dialect; nullptr for another name.
  const std::string* format_regex_of(std::string_view name) const {
    if (name == "hostname" && (dialect_ == JsonSchemaDialect::kDraft4 || dialect_ == JsonSchemaDialect::kDraft6))
      return &kHostnameRfc1123Regex;
    auto it = kFormats.find(name);
    return it == kFormats.end() ? nullptr : &it->second;
  }
  Expr fail(const std::string& path, const std::string& message) {
    if (!error_) error_ = fmt::format("schema at {}: {}", path, message);
    return b_.nothing();
  }

  // ---- whitespace and shared rules ----

  Expr ws() {
    if (!o_.allow_whitespace) return b_.empty();
    std::bitset<256> indent;
    indent.set(' ');
    indent.set('\t');
    return b_.optional(
        b_.choice({b_.literal(" "),
                   b_.sequence({b_.literal("\n"), b_.repeat(b_.byte_set(indent), 0, uint32_t(o_.max_indent))})}));
  }
  Expr sep() { return b_.sequence({ws(), b_.literal(","), ws()}); }
  Expr colon() { return b_.sequence({ws(), b_.literal(":"), ws()}); }

  int32_t shared_rule(int32_t& slot, const char* name, const std::function<Expr()>& body) {
    if (slot < 0) {
      slot = b_.add_rule(b_.unique_rule_name(name));
      b_.set_body(slot, body());
    }
    return slot;
  }
  int32_t string_rule() {
    return shared_rule(string_rule_, "string", [&] {
      return b_.sequence({b_.literal("\""), b_.star(json_string_any_char(b_)), b_.literal("\"")});
    });
  }
  int32_t number_rule() {
    return shared_rule(number_rule_, "number", [&] {
      const Expr digit = b_.byte_range('0', '9');
      const Expr integer =
          b_.sequence({b_.optional(b_.literal("-")),
                       b_.choice({b_.literal("0"),
                                  b_.sequence({b_.byte_range('1', '9'), b_.repeat(digit, 0, kFreeIntegerDigits - 1)})})});
      const Expr fraction = b_.optional(b_.sequence({b_.literal("."), b_.repeat(digit, 1, 16)}));
      std::bitset<256> e, sign;
      e.set('e').set('E');
      sign.set('+').set('-');
      const Expr exponent =
          b_.optional(b_.sequence({b_.byte_set(e), b_.optional(b_.byte_set(sign)), b_.repeat(digit, 1, 2)}));
      return b_.sequence({integer, fraction, exponent});
    });
  }
  int32_t integer_rule() {
    return shared_rule(integer_rule_, "integer", [&] {
      return b_.choice({b_.literal("0"), b_.sequence({b_.optional(b_.literal("-")), b_.byte_range('1', '9'),
                                                       b_.repeat(b_.byte_range('0', '9'), 0, kFreeIntegerDigits - 1)})});
    });
  }
  int32_t value_rule() {
    if (value_rule_ < 0) {
      value_rule_ = b_.add_rule(b_.unique_rule_name("value"));
      b_.set_body(value_rule_,
                  b_.choice({b_.rule_ref(object_any_rule()), b_.rule_ref(array_any_rule()), b_.rule_ref(string_rule()),
                             b_.rule_ref(number_rule()), b_.literal("true"), b_.literal("false"), b_.literal("null")}));
    }
    return value_rule_;
  }
  int32_t object_any_rule() {
    if (object_rule_ < 0) {
      object_rule_ = b_.add_rule(b_.unique_rule_name("object"));
      const Expr kv = b_.sequence({b_.rule_ref(string_rule()), colon(), b_.rule_ref(value_rule())});
      b_.set_body(object_rule_, container("{", b_.sequence({kv, b_.star(b_.sequence({sep(), kv}))}), true, "}"));
    }
    return object_rule_;
  }
  int32_t array_any_rule() {
    if (array_rule_ < 0) {
      array_rule_ = b_.add_rule(b_.unique_rule_name("array"));
      const Expr v = b_.rule_ref(value_rule());
      b_.set_body(array_rule_, container("[", b_.sequence({v, b_.star(b_.sequence({sep(), v}))}), true, "]"));
    }
    return array_rule_;
  }
  // open ws members ws close, or open ws close when `can_be_empty`.
  Expr container(const char* open, Expr nonempty, bool can_be_empty, const char* close) {
    return b_.sequence({b_.literal(open),
                        b_.choice({b_.sequence({ws(), nonempty, ws()}), can_be_empty ? ws() : b_.nothing()}),
                        b_.literal(close)});
  }

  // ---- $ref ----

  const json* resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') {
      fail(path, fmt::format("$ref '{}' is not supported: only local references (#/...) are", ref));
      return nullptr;
    }
    std::string pointer;
    for (size_t i = 1; i < ref.size(); ++i) {  // percent-decoding (URI fragment)
      if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit(uint8_t(ref[i + 1])) &&
          std::isxdigit(uint8_t(ref[i + 2]))) {
        pointer += char(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        pointer += ref[i];
      }
    }
    if (!pointer.empty() && pointer[0] != '/') {
      fail(path, fmt::format("$ref '{}' is not supported: anchors ($anchor) are not resolved", ref));
      return nullptr;
    }
    const json* node = &root_;
    size_t pos = 0;
    while (pos < pointer.size()) {
      const size_t next = pointer.find('/', pos + 1);
      std::string token = pointer.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      pos = next == std::string::npos ? pointer.size() : next;
      std::string key;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
          key += token[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          key += token[i];
        }
      }
      if (const json* m = node->is_object() ? member(*node, key) : nullptr) {
        node = m;
      } else if (node->is_array() && !key.empty() && key.size() < 10 &&
                 std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                 std::stoul(key) < node->size()) {
        node = &(*node)[std::stoul(key)];
      } else {
        fail(path, fmt::format("$ref '{}' does not resolve", ref));
        return nullptr;
      }
    }
    return node;
  }

  // An object's member by key. ordered_json finds keys by a linear scan: a `$defs` of n definitions, each reached
  // through a $ref, would cost n^2 / 2 comparisons, so big objects get a hash index on their first lookup.
  const json* member(const json& object, const std::string& key) {
    constexpr size_t kIndexFrom = 32;
    if (object.size() < kIndexFrom) {
      auto it = object.find(key);
      return it == object.end() ? nullptr : &*it;
    }
    auto [index, fresh] = member_index_.try_emplace(&object);
    if (fresh)
      for (auto it = object.begin(); it != object.end(); ++it) index->second.emplace(it.key(), &it.value());
    auto it = index->second.find(key);
    return it == index->second.end() ? nullptr : it->second;
  }

  // A schema that is only another $ref (annotations aside): an alias of the schema it names.
  static const json* alias_of(const json& s) {
    if (!s.is_object()) return nullptr;
    auto r = s.find("$ref");
    if (r == s.end() || !r->is_string()) return nullptr;
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != "$ref" && !kAnnotations.count(it.key())) return nullptr;
    return &*r;
  }

  // The rule of the schema `ref` names. A chain of aliases is followed to the schema at its end, and every
  // reference on the chain shares that schema's one rule: n aliases would otherwise be n nested calls, which the
  // matcher must descend before its first byte.
  int32_t ref_rule(const std::string& ref, const std::string& path) {
    std::vector<std::string> chain;
    std::set<std::string, std::less<>> on_chain;
    std::string cur = ref;
    int32_t rule = -1;
    while (true) {
      if (auto it = refs_.find(cur); it != refs_.end()) {
        rule = it->second;
        break;
      }
      const json* target = resolve(cur, path);
      if (!target) return -1;
      chain.push_back(cur);
      on_chain.insert(cur);
      const json* next = alias_of(*target);
      if (!next) {
        std::string name;
        const size_t slash = cur.find_last_of('/');
        for (const char c : cur.substr(slash == std::string::npos ? 0 : slash + 1))
          name += std::isalnum(uint8_t(c)) ? c : '-';
        if (name.empty()) name = "ref";
        rule = b_.add_rule(b_.unique_rule_name(name));
        pending_.push_back({rule, cur});
        break;
      }
      cur = next->get<std::string>();
      if (on_chain.count(cur)) {
        fail(path, fmt::format("$ref '{}' is a cycle of references that never reaches a schema", ref));
        return -1;
      }
    }
    for (const std::string& r : chain) refs_[r] = rule;
    return rule;
  }

  // ---- allOf merging ----

  // Flattens `s` (a schema with allOf and/or $ref) into a list of plain members (no allOf, no $ref at top).
  bool collect_members(const json& s, const std::string& path, int32_t depth, std::vector<json>& out) {
    if (depth > kMaxSchemaDepth) {
      fail(path, "allOf/$ref nested too deeply (or a $ref cycle without a property in between)");
      return false;
    }
    if (s.is_boolean()) {
      out.push_back(s);
      return true;
    }
    if (!s.is_object()) {
      fail(path, "a schema must be an object or a boolean");
      return false;
    }
    json rest = s;
    rest.erase("allOf");
    rest.erase("$ref");
    rest.erase("not");
    if (s.contains("not")) {
      const json negated = complement(s["not"], path + "/not", depth + 1);
      if (failed()) return false;
      out.push_back(negated);
    }
    // if/then/else: (if and then) or (not if and else); both branches cannot hold at once, so anyOf is exact.
    for (const char* k : {"if", "then", "else"}) rest.erase(k);
    if (s.contains("if") && (s.contains("then") || s.contains("else"))) {
      const json negated = complement(s["if"], path + "/if", depth + 1);
      if (failed()) return false;
      out.push_back(json{{"anyOf",
                          {json{{"allOf", {s["if"], s.value("then", json(true))}}},
                           json{{"allOf", {negated, s.value("else", json(true))}}}}}});
    }
    // Dependencies: per trigger property, either it is absent or it is present with what it needs.
    size_t num_dependencies = 0;
    for (const char* k : {"dependencies", "dependentRequired", "dependentSchemas"}) {
      if (!s.contains(k)) continue;
      rest.erase(k);
      if (!s[k].is_object()) return fail(path, fmt::format("'{}' must be an object", k)), false;
      for (auto it = s[k].begin(); it != s[k].end(); ++it) {
        if (o_.any_property_order && it.value().is_array()) {
          // Enforced by the object's member sets, or else expanded as below (convert_object).
          json names = json::array();
          for (const json& r : it.value()) {
            if (!r.is_string()) return fail(path, fmt::format("'{}' must list property names", k)), false;
            names.push_back(r);
          }
          out.push_back(json{{kNeeds, {{it.key(), names}}}});
          continue;
        }
        if (++num_dependencies > kMaxDependencies)
          return fail(path, fmt::format("more than {} dependencies are not supported", kMaxDependencies)), false;
        json present = {{"required", {it.key()}}};
        if (it.value().is_array()) {
          for (const json& r : it.value()) {
            if (!r.is_string()) return fail(path, fmt::format("'{}' must list property names", k)), false;
            present["required"].push_back(r);
          }
        } else if (it.value().is_object() || it.value().is_boolean()) {
          present["allOf"] = json::array({it.value()});
        } else {
          return fail(path, fmt::format("'{}' values must be arrays or schemas", k)), false;
        }
        out.push_back(json{{"anyOf", {json{{"properties", {{it.key(), false}}}}, present}}});
      }
    }
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return fail(path, "$ref must be a string"), false;
      const json* target = resolve(s["$ref"].get<std::string>(), path);
      if (!target || !collect_members(*target, s["$ref"].get<std::string>(), depth + 1, out)) return false;
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].empty()) return fail(path, "allOf must be a non-empty array"), false;
      for (size_t i = 0; i < s["allOf"].size(); ++i) {
        if (!collect_members(s["allOf"][i], fmt::format("{}/allOf/{}", path, i), depth + 1, out)) return false;
      }
    }
    if (has_assertions(rest)) out.push_back(rest);
    return true;
  }

  static std::vector<std::string> types_of(const json& s) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
      if (s["type"].is_array()) {
        for (const json& t : s["type"]) {
          if (t.is_string()) types.push_back(t.get<std::string>());
        }
      }
    }
    return types;
  }

  static Bounds bounds_of(const json& s) {
    Bounds b;
    auto tighter_lo = [&](NumberBound n) {
      if (!b.lo || n.value > b.lo->value || (n.value == b.lo->value && n.exclusive)) b.lo = n;
    };
    auto tighter_hi = [&](NumberBound n) {
      if (!b.hi || n.value < b.hi->value || (n.value == b.hi->value && n.exclusive)) b.hi = n;
    };
    const bool draft4_min = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean();
    const bool draft4_max = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean();
    if (s.contains("minimum") && s["minimum"].is_number()) {
      tighter_lo({s["minimum"].get<double>(), draft4_min && s["exclusiveMinimum"].get<bool>()});
    }
    if (s.contains("maximum") && s["maximum"].is_number()) {
      tighter_hi({s["maximum"].get<double>(), draft4_max && s["exclusiveMaximum"].get<bool>()});
    }
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number()) {
      tighter_lo({s["exclusiveMinimum"].get<double>(), true});
    }
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number()) {
      tighter_hi({s["exclusiveMaximum"].get<double>(), true});
    }
    return b;
  }

  // The items of allOf(members): each member's positional list (prefixItems, or a draft-04..2019 items array) and
  // the schema of the items after it (items, or additionalItems beside an items array) hold for that member alone,
  // so position i takes every member's schema for i (its list's entry, else its rest) and the items past every
  // list take every member's rest. Writes prefixItems and items into `merged`; false on a malformed list.
  bool merge_array_items(const std::vector<json>& members, json* merged) {
    struct Part {
      std::vector<json> prefix;
      json rest = true;
    };
    std::vector<Part> parts;
    size_t longest = 0;
    for (const json& m : members) {
      if (!m.is_object()) continue;
      Part part;
      const json* list = m.contains("prefixItems") ? &m["prefixItems"]
                         : m.contains("items") && m["items"].is_array() ? &m["items"]
                                                                        : nullptr;
      if (list) {
        if (!list->is_array()) return false;
        part.prefix.assign(list->begin(), list->end());
        const char* rest_key = m.contains("prefixItems") ? "items" : "additionalItems";
        if (m.contains(rest_key)) part.rest = m[rest_key];
      } else if (m.contains("items")) {
        part.rest = m["items"];
      } else {
        continue;
      }
      longest = std::max(longest, part.prefix.size());
      parts.push_back(std::move(part));
    }
    if (parts.empty()) return true;
    auto both = [](const json& a, const json& b) {
      if (a == json(true)) return b;
      if (b == json(true)) return a;
      return json{{"allOf", json::array({a, b})}};
    };
    json rest = true;
    for (const Part& p : parts) rest = both(rest, p.rest);
    if (longest > 0) {
      json prefix = json::array();
      for (size_t i = 0; i < longest; ++i) {
        json at = true;
        for (const Part& p : parts) at = both(at, i < p.prefix.size() ? p.prefix[i] : p.rest);
        prefix.push_back(at);
      }
      (*merged)["prefixItems"] = prefix;
    }
    if (rest != json(true)) (*merged)["items"] = rest;
    return true;
  }

  // One schema equivalent to allOf(members) (members are plain: no allOf, no $ref at the top).
  json merge(const std::vector<json>& members, const std::string& path) {
    json merged = json::object();
    std::vector<const json*> closed;       // members with additionalProperties: false
    std::vector<const json*> constrained;  // members with a schema as additionalProperties
    std::optional<std::set<std::string>> types;
    Bounds bounds;
    bool any_bounds = false;
    for (const json& m : members) {
      if (m.is_boolean()) {
        if (!m.get<bool>()) return json(false);
        continue;
      }
      for (auto it = m.begin(); it != m.end() && !failed(); ++it) {
        const std::string& k = it.key();
        const json& v = it.value();
        if (kAnnotations.count(k)) continue;
        if (k == "type") {
          std::set<std::string> t;
          for (const std::string& name : types_of(m)) {
            t.insert(name);
            if (name == "number") t.insert("integer");
          }
          if (types) {
            std::set<std::string> both;
            for (const std::string& name : *types) {
              if (t.count(name)) both.insert(name);
            }
            // number and integer: their intersection is integer.
            if (both.count("number") && !(types->count("number") && t.count("number"))) both.erase("number");
            types = both;
          } else {
            types = t;
          }
        } else if (k == "properties") {
          if (!v.is_object()) return fail(path, "'properties' must be an object"), json(false);
          for (auto p = v.begin(); p != v.end(); ++p) {
            json& slot = merged["properties"][p.key()];
            slot = slot.is_null() ? p.value() : json{{"allOf", json::array({slot, p.value()})}};
          }
        } else if (k == "required") {
          if (!v.is_array()) return fail(path, "'required' must be an array"), json(false);
          for (const json& r : v) {
            if (!merged.contains("required") ||
                std::find(merged["required"].begin(), merged["required"].end(), r) == merged["required"].end()) {
              merged["required"].push_back(r);
            }
          }
        } else if (k == "additionalProperties") {
          if (v.is_boolean() && !v.get<bool>()) closed.push_back(&m);
          if (v.is_object()) constrained.push_back(&m);
          if (v.is_boolean() && v.get<bool>() && !merged.contains("additionalProperties")) merged[k] = true;
        } else if (k == "items" || k == "prefixItems" || k == "additionalItems") {
          continue;  // positions depend on the member's own list: combined after the loop
        } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
          any_bounds = true;
        } else if (k == "minLength" || k == "minItems" || k == "minProperties") {
          merged[k] = merged.contains(k) ? std::max(merged[k], v) : v;
        } else if (k == "maxLength" || k == "maxItems" || k == "maxProperties") {
          merged[k] = merged.contains(k) ? std::min(merged[k], v) : v;
        } else if (k == "enum" || k == "const") {
          json values = k == "const" ? json::array({v}) : v;
          if (!values.is_array()) return fail(path, "'enum' must be an array"), json(false);
          if (merged.contains("enum")) {
            json both = json::array();
            for (const json& x : merged["enum"]) {
              if (std::find(values.begin(), values.end(), x) != values.end()) both.push_back(x);
            }
            values = both;
          }
          merged["enum"] = values;
        } else if (k == "anyOf" && merged.contains("anyOf")) {
          // anyOf(A) and anyOf(B): anyOf of every pair's allOf.
          if (!v.is_array() || !merged["anyOf"].is_array() || v.size() * merged["anyOf"].size() > kMaxAnyOfProduct)
            return fail(path, "allOf members with anyOf lists too long to combine are not supported"), json(false);
          json pairs = json::array();
          for (const json& a : merged["anyOf"])
            for (const json& b : v) pairs.push_back(json{{"allOf", json::array({a, b})}});
          merged["anyOf"] = pairs;
        } else if (k == "anyOf" || k == "oneOf") {
          if (merged.contains("oneOf") || (k == "oneOf" && merged.contains("anyOf"))) {
            return fail(path, "allOf members with more than one anyOf/oneOf are not supported"), json(false);
          }
          merged[k] = v;
        } else if ((k == kNotPatterns || k == kNotStrings) && v.is_array()) {
          for (const json& x : v) merged[k].push_back(x);
        } else if (k == kNeeds && v.is_object()) {
          for (auto d = v.begin(); d != v.end(); ++d)
            for (const json& name : d.value()) merged[k][d.key()].push_back(name);
        } else if (k == "uniqueItems") {
          merged[k] = merged.value(k, false) || (v.is_boolean() && v.get<bool>());
        } else if (!kKeywordType.count(k) && !kGenericKeywords.count(k)) {
          continue;  // unknown to JSON Schema: constrains nothing
        } else if (merged.contains(k) && merged[k] != v) {
          return fail(path, fmt::format("allOf members with different '{}' values are not supported", k)), json(false);
        } else {
          merged[k] = v;
        }
      }
      if (any_bounds) {
        const Bounds mb = bounds_of(m);
        if (mb.lo &&
            (!bounds.lo || mb.lo->value > bounds.lo->value || (mb.lo->value == bounds.lo->value && mb.lo->exclusive)))
          bounds.lo = mb.lo;
        if (mb.hi &&
            (!bounds.hi || mb.hi->value < bounds.hi->value || (mb.hi->value == bounds.hi->value && mb.hi->exclusive)))
          bounds.hi = mb.hi;
      }
    }
    if (!merge_array_items(members, &merged))
      return fail(path, "'prefixItems' and 'items' lists must be arrays"), json(false);
    // A member's additionalProperties depends on its own properties and patterns: merged with patterns of another
    // member, or with properties of another when it has patterns, a name could escape one member's constraint.
    size_t with_patterns = 0, with_properties = 0;
    for (const json& m : members) {
      if (!m.is_object()) continue;
      with_patterns += m.contains("patternProperties");
      with_properties += m.contains("properties") || m.contains("patternProperties");
    }
    if (with_patterns > 0 && (!closed.empty() || !constrained.empty()) && with_properties > 1)
      return fail(path,
                  "allOf members with patternProperties beside another member's additionalProperties or "
                  "properties are not supported"),
             json(false);
    if (types) merged["type"] = json(std::vector<std::string>(types->begin(), types->end()));
    if (types && types->empty()) return json(false);
    if (bounds.lo) merged[bounds.lo->exclusive ? "exclusiveMinimum" : "minimum"] = bounds.lo->value;
    if (bounds.hi) merged[bounds.hi->exclusive ? "exclusiveMaximum" : "maximum"] = bounds.hi->value;
    // additionalProperties: a closed member allows only its own properties; a constrained one applies its schema
    // to every property it does not declare.
    if (merged.contains("properties")) {
      for (const json* m : closed) {
        const json props = m->value("properties", json::object());
        for (auto it = merged["properties"].begin(); it != merged["properties"].end();) {
          if (!props.contains(it.key())) {
            it = merged["properties"].erase(it);
          } else {
            ++it;
          }
        }
      }
      for (const json* m : constrained) {
        const json props = m->value("properties", json::object());
        for (auto it = merged["properties"].begin(); it != merged["properties"].end(); ++it) {
          if (!props.contains(it.key()))
            it.value() = json{{"allOf", json::array({it.value(), (*m)["additionalProperties"]})}};
        }
      }
    }
    if (!closed.empty()) {
      merged["additionalProperties"] = false;
    } else if (!constrained.empty()) {
      json all = json::array();
      for (const json* m : constrained) all.push_back((*m)["additionalProperties"]);
      merged["additionalProperties"] = all.size() == 1 ? all[0] : json{{"allOf", all}};
    }
    return merged;
  }

  // ---- conversion ----

  // ---- identical sub-schemas ----

  // Text that two schemas share exactly when they convert to the same grammar: the schema written out, with the
  // annotations of every schema in it left out (a property named "title" is kept: only schema positions are
  // stripped). Sets *structured when the schema has an object or array in it (its grammar calls rules). False once
  // the text passes kMaxSchemaKeyBytes (the schema is then converted where it is, unshared).
  static bool normalized_text(const json& s, std::string& out, bool* structured) {
    static const std::set<std::string, std::less<>> kSchemaMaps = {"properties", "patternProperties",
                                                                   "dependentSchemas", "dependencies"};
    static const std::set<std::string, std::less<>> kSchemaValues = {
        "items", "prefixItems", "additionalItems", "additionalProperties", "allOf", "anyOf", "oneOf", "not",
        "if",    "then",        "else",            "contains",             "propertyNames"};
    static const std::set<std::string, std::less<>> kStructured = {"properties", "patternProperties", "items",
                                                                   "prefixItems", "additionalProperties", "$ref"};
    if (out.size() > kMaxSchemaKeyBytes) return false;
    if (!s.is_object()) {
      out += s.dump();
      return true;
    }
    out += '{';
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (kAnnotations.count(k)) continue;
      out += json(k).dump();
      out += ':';
      if (kStructured.count(k) ||
          (k == "type" && (v == "object" || v == "array" ||
                           (v.is_array() && (std::find(v.begin(), v.end(), json("object")) != v.end() ||
                                             std::find(v.begin(), v.end(), json("array")) != v.end())))))
        *structured = true;
      if (kSchemaMaps.count(k) && v.is_object()) {
        out += '{';
        for (auto m = v.begin(); m != v.end(); ++m) {
          out += json(m.key()).dump();
          out += ':';
          if (!normalized_text(m.value(), out, structured)) return false;
          out += ',';
        }
        out += '}';
      } else if (kSchemaValues.count(k) && v.is_array()) {
        out += '[';
        for (const json& x : v) {
          if (!normalized_text(x, out, structured)) return false;
          out += ',';
        }
        out += ']';
      } else if (kSchemaValues.count(k)) {
        if (!normalized_text(v, out, structured)) return false;
      } else {
        out += v.dump();
      }
      out += ',';
    }
    out += '}';
    return out.size() <= kMaxSchemaKeyBytes;
  }

  // A schema met before converts to the same expression; one with an object or array in it (big, and calling
  // rules, so its copies would not merge) becomes one rule, called from each place it appears, instead of a copy
  // of its automaton per place. `own_rule`: the rule whose body this schema is ($ref targets, the root), which
  // later copies call. The texts written for keys are bounded per schema (kMaxSchemaKeyBytes) and in all
  // (kMaxSchemaKeyTotal), past which schemas convert unshared, as they would without this. `repeated`: the caller
  // writes the expression several times (an array's items), so a schema worth a rule is one from its first use.
  Expr convert_schema(const json& s, const std::string& path, int32_t depth, int32_t own_rule = -1,
                      bool repeated = false) {
    if (failed()) return b_.nothing();
    if (!s.is_object() || alias_of(s) || schema_key_bytes_ > kMaxSchemaKeyTotal)
      return convert_schema_body(s, path, depth);
    std::string key;
    bool structured = false;
    const bool keyed = normalized_text(s, key, &structured);
    schema_key_bytes_ += key.size();
    if (!keyed) return convert_schema_body(s, path, depth);
    if (auto it = converted_.find(key); it != converted_.end()) {
      SharedSchema& shared = it->second;
      const bool worth_a_rule = structured && key.size() >= kShareSchemaFromBytes;
      if (shared.rule < 0 && own_rule >= 0 && worth_a_rule) {
        shared.rule = own_rule;  // this copy is a rule's whole body already
        return shared.expr;
      }
      if (shared.rule < 0 && worth_a_rule) {
        shared.rule = b_.add_rule(b_.unique_rule_name("schema"));
        b_.set_body(shared.rule, shared.expr);
      }
      return shared.rule >= 0 ? b_.rule_ref(shared.rule) : shared.expr;
    }
    if (repeated && own_rule < 0 && structured && key.size() >= kShareSchemaFromBytes) {
      const int32_t rule = b_.add_rule(b_.unique_rule_name("items"));
      converted_.emplace(key, SharedSchema{b_.nothing(), rule});
      const Expr e = convert_schema_body(s, path, depth);
      b_.set_body(rule, e);
      converted_.at(key).expr = e;
      return b_.rule_ref(rule);
    }
    const Expr e = convert_schema_body(s, path, depth);
    if (!failed()) converted_.emplace(std::move(key), SharedSchema{e, own_rule});
    return e;
  }

  Expr convert_schema_body(const json& s, const std::string& path, int32_t depth) {
    if (failed()) return b_.nothing();
    if (depth > kMaxSchemaDepth) return fail(path, fmt::format("schema nested deeper than {} levels", kMaxSchemaDepth));
    if (s.is_boolean()) return s.get<bool>() ? b_.rule_ref(value_rule()) : b_.nothing();
    if (!s.is_object()) return fail(path, "a schema must be an object or a boolean");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return fail(path, "$ref must be a string");
      if (const json* ref = alias_of(s)) {
        const int32_t rule = ref_rule(ref->get<std::string>(), path);
        return rule < 0 ? b_.nothing() : b_.rule_ref(rule);
      }
    }
    if (s.contains("allOf") || s.contains("$ref") || s.contains("not") || s.contains("if") ||
        s.contains("dependencies") || s.contains("dependentRequired") || s.contains("dependentSchemas")) {
      std::vector<json> members;
      if (!collect_members(s, path, depth, members)) return b_.nothing();
      const json merged = merge(members, path);
      if (failed()) return b_.nothing();
      return convert_schema(merged, path, depth + 1);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return convert_alternatives(s, path, depth);
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (kUnsupported.count(it.key())) return fail(path, fmt::format("'{}' is not supported", it.key()));
    }
    if (s.contains("enum") || s.contains("const")) return convert_enum(s, path);

    std::vector<std::string> types = types_of(s);
    if (s.contains("type") && types.empty()) return fail(path, "'type' must be a type name or an array of them");
    for (const std::string& t : types) {
      if (std::find(kAllTypes.begin(), kAllTypes.end(), t) == kAllTypes.end()) {
        return fail(path, fmt::format("unknown type '{}'", t));
      }
    }
    if (types.empty()) return convert_untyped(s, path, depth);
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<Expr> alts;
    for (const std::string& t : types) {
      if (t == "integer" && has_number) continue;  // number covers it
      alts.push_back(convert_typed(s, t, path, depth));
    }
    return b_.choice(std::move(alts));
  }

  // A schema without `type` allows a value of every type, each held only to the keywords of its own type ({"maximum":
  // 5} allows any string, object, array...): a type none of whose keywords appear takes its shared free rule.
  Expr convert_untyped(const json& s, const std::string& path, int32_t depth) {
    std::set<std::string, std::less<>> constrained;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "format" && it.value().is_string() && !kFormats.count(it.value().get<std::string>()) &&
          !kUnsupportedFormats.count(it.value().get<std::string>()))
        continue;  // a name JSON Schema does not define: an annotation
      if (auto t = kKeywordType.find(k); t != kKeywordType.end()) constrained.insert(t->second);
    }
    if (constrained.empty()) return b_.rule_ref(value_rule());
    std::vector<Expr> alts;
    for (const std::string t : {"object", "array", "string", "number"}) {
      if (constrained.count(t)) {
        alts.push_back(convert_typed(s, t, path, depth));
      } else {
        alts.push_back(b_.rule_ref(t == "object"   ? object_any_rule()
                                   : t == "array"  ? array_any_rule()
                                   : t == "string" ? string_rule()
                                                   : number_rule()));
      }
    }
    alts.push_back(b_.literal("true"));
    alts.push_back(b_.literal("false"));
    alts.push_back(b_.literal("null"));
    return b_.choice(std::move(alts));
  }

  Expr convert_typed(const json& s, const std::string& type, const std::string& path, int32_t depth) {
    if (type == "object") return convert_object(s, path, depth);
    if (type == "array") return convert_array(s, path, depth);
    if (type == "string") return convert_string(s, path);
    if (type == "number" || type == "integer") return convert_number(s, type == "integer", path);
    if (type == "boolean") return b_.choice({b_.literal("true"), b_.literal("false")});
    return b_.literal("null");
  }

  Expr convert_alternatives(const json& s, const std::string& path, int32_t depth) {
    if (s.contains("anyOf") && s.contains("oneOf"))
      return fail(path, "anyOf and oneOf in one schema are not supported");
    const bool one_of = s.contains("oneOf");
    const char* key = one_of ? "oneOf" : "anyOf";
    const json& list = s[key];
    if (!list.is_array() || list.empty()) return fail(path, fmt::format("'{}' must be a non-empty array", key));
    json siblings = s;
    siblings.erase(key);
    const bool merge_siblings = has_assertions(siblings);
    std::vector<json> branches;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string bpath = fmt::format("{}/{}/{}", path, key, i);
      if (!merge_siblings) {
        branches.push_back(list[i]);
        continue;
      }
      std::vector<json> members;
      if (!collect_members(siblings, path, depth, members) || !collect_members(list[i], bpath, depth, members)) {
        return b_.nothing();
      }
      branches.push_back(merge(members, bpath));
      if (failed()) return b_.nothing();
    }
    if (one_of) {
      // Branches that may overlap are made exclusive: branch i becomes allOf(i, not j) for each j it may share a
      // value with, exact when each such complement is expressible (else the schema is refused naming the pair).
      std::vector<json> exclusive = branches;
      for (const auto& [i, j] : overlapping_branches(branches, path, depth)) {
        for (const auto& [mine, other] : {std::pair{i, j}, std::pair{j, i}}) {
          // Every branch already holds the siblings, so excluding list[other] alone is enough; and when `mine`
          // allows only types `other` allows too, excluding other's assertions is.
          const std::string opath = fmt::format("{}/oneOf/{}", path, other);
          json excluded = list[other];
          std::vector<json> members;
          if (!collect_members(list[other], opath, depth + 1, members)) return b_.nothing();
          if (const json plain = merge(members, opath); plain.is_object() && plain.contains("type")) {
            const std::set<std::string> theirs = shape_of(plain, opath, depth + 1).types;
            const std::set<std::string> ours = shape_of(exclusive[mine], opath, depth + 1).types;
            if (!ours.empty() &&
                std::all_of(ours.begin(), ours.end(), [&](const std::string& t) { return theirs.count(t) > 0; })) {
              excluded = plain;
              excluded.erase("type");
            }
          }
          const json negated = complement(excluded, opath, depth + 1);
          if (failed()) {
            *error_ = fmt::format(
                "schema at {}: oneOf branches {} and {} may both match one value, and the complement that would make "
                "them exclusive is not expressible ({})",
                path, i, j, *error_);
            return b_.nothing();
          }
          exclusive[mine] = json{{"allOf", json::array({exclusive[mine], negated})}};
        }
      }
      branches = std::move(exclusive);
    }
    std::vector<Expr> alts;
    for (size_t i = 0; i < branches.size() && !failed(); ++i) {
      alts.push_back(convert_schema(branches[i], fmt::format("{}/{}/{}", path, key, i), depth + 1));
    }
    return b_.choice(std::move(alts));
  }

  // What a branch of a oneOf can be, for the disjointness check: its type set (empty: any) and, when it is an
  // enum/const, its values.
  struct BranchShape {
    std::set<std::string> types;
    std::optional<json> values;
    json schema;
  };
  BranchShape shape_of(const json& branch, const std::string& path, int32_t depth) {
    BranchShape shape;
    std::vector<json> members;
    if (!collect_members(branch, path, depth, members)) return shape;
    shape.schema = merge(members, path);
    if (!shape.schema.is_object()) return shape;
    for (const std::string& t : types_of(shape.schema)) shape.types.insert(t == "integer" ? "number" : t);
    if (shape.schema.contains("enum")) shape.values = shape.schema["enum"];
    if (shape.schema.contains("const")) shape.values = json::array({shape.schema["const"]});
    return shape;
  }
  static bool values_disjoint(const json& a, const json& b) {
    for (const json& x : a) {
      if (std::find(b.begin(), b.end(), x) != b.end()) return false;
    }
    return true;
  }
  // The pairs of oneOf branches not provably disjoint.
  std::vector<std::pair<size_t, size_t>> overlapping_branches(const std::vector<json>& branches,
                                                              const std::string& path, int32_t depth) {
    std::vector<std::pair<size_t, size_t>> overlapping;
    std::vector<BranchShape> shapes;
    for (size_t i = 0; i < branches.size(); ++i)
      shapes.push_back(shape_of(branches[i], fmt::format("{}/oneOf/{}", path, i), depth));
    if (failed()) return overlapping;
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (size_t j = i + 1; j < shapes.size(); ++j) {
        const BranchShape& a = shapes[i];
        const BranchShape& b = shapes[j];
        bool disjoint = false;
        if (!a.types.empty() && !b.types.empty()) {
          disjoint =
              std::none_of(a.types.begin(), a.types.end(), [&](const std::string& t) { return b.types.count(t) > 0; });
        }
        if (!disjoint && a.values && b.values) disjoint = values_disjoint(*a.values, *b.values);
        // Objects told apart by a property both require, whose values cannot be equal (a discriminator).
        if (!disjoint && a.schema.is_object() && b.schema.is_object() && a.schema.contains("required") &&
            b.schema.contains("required") && a.schema.contains("properties") && b.schema.contains("properties")) {
          for (const json& r : a.schema["required"]) {
            if (!r.is_string() ||
                std::find(b.schema["required"].begin(), b.schema["required"].end(), r) == b.schema["required"].end())
              continue;
            const std::string k = r.get<std::string>();
            if (!a.schema["properties"].contains(k) || !b.schema["properties"].contains(k)) continue;
            const BranchShape pa = shape_of(a.schema["properties"][k], path, depth + 1);
            const BranchShape pb = shape_of(b.schema["properties"][k], path, depth + 1);
            if (pa.values && pb.values && values_disjoint(*pa.values, *pb.values)) disjoint = true;
          }
        }
        if (!disjoint) overlapping.push_back({i, j});
      }
    }
    return overlapping;
  }

  Expr convert_enum(const json& s, const std::string& path) {
    const std::optional<json> values = enum_values(s, path);
    if (!values) return b_.nothing();
    std::vector<Expr> alts;
    for (const json& v : *values) alts.push_back(value_literal(v, 0));
    return b_.choice(std::move(alts));
  }

  // The values an enum/const schema allows: those listed that its siblings accept; nullopt (and fail) when a
  // sibling cannot be checked.
  std::optional<json> enum_values(const json& s, const std::string& path) {
    json values = s.contains("const") ? json::array({s["const"]}) : s["enum"];
    if (!values.is_array()) return fail(path, "'enum' must be an array"), std::nullopt;
    if (s.contains("const") && s.contains("enum")) {
      if (std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) values = json::array();
    }
    // Siblings restrict the listed values. Checked here: type, numeric bounds, lengths and counts, string patterns
    // and formats. Another keyword is refused only when a listed value has the type it constrains; keywords
    // unknown to JSON Schema constrain nothing.
    static const std::set<std::string, std::less<>> kChecked = {
        "enum",      "const",    "type",     "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "minItems", "maxItems", "pattern", "format",  kNotPatterns,       kNotStrings};
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (kChecked.count(it.key()) || kAnnotations.count(it.key())) continue;
      auto type = kKeywordType.find(it.key());
      const bool known = type != kKeywordType.end() || kGenericKeywords.count(it.key());
      if (!known) continue;
      if (type != kKeywordType.end() &&
          std::none_of(values.begin(), values.end(), [&](const json& v) { return value_has_type(v, type->second); }))
        continue;
      return fail(path, fmt::format("'enum'/'const' together with '{}' is not supported", it.key())), std::nullopt;
    }
    const std::vector<std::string> types = types_of(s);
    const Bounds bounds = bounds_of(s);
    std::vector<std::string> patterns;  // each must match a string value; the negated ones must not
    if (s.contains("pattern") && s["pattern"].is_string()) patterns.push_back(s["pattern"].get<std::string>());
    if (s.contains("format") && s["format"].is_string()) {
      const std::string* regex = format_regex_of(s["format"].get<std::string>());
      if (!regex && kUnsupportedFormats.count(s["format"].get<std::string>()) &&
          std::any_of(values.begin(), values.end(), [](const json& v) { return v.is_string(); }))
        return fail(path, fmt::format("format '{}' is not supported", s["format"].get<std::string>())), std::nullopt;
      if (regex) patterns.push_back(*regex);
    }
    const json not_patterns = s.value(kNotPatterns, json::array());
    const json not_strings = s.value(kNotStrings, json::array());
    json allowed = json::array();
    for (const json& v : values) {
      if (!types.empty() &&
          std::none_of(types.begin(), types.end(), [&](const std::string& t) { return value_has_type(v, t); }))
        continue;
      if (v.is_number()) {
        const double x = v.get<double>();
        if (bounds.lo && (x < bounds.lo->value || (bounds.lo->exclusive && x == bounds.lo->value))) continue;
        if (bounds.hi && (x > bounds.hi->value || (bounds.hi->exclusive && x == bounds.hi->value))) continue;
      }
      if (v.is_string()) {
        size_t length = 0, pos = 0;
        uint32_t cp;
        const std::string& str = v.get_ref<const std::string&>();
        while (pos < str.size() && decode_utf8(str, pos, cp)) ++length;
        if (s.contains("minLength") && s["minLength"].is_number() && double(length) < s["minLength"].get<double>())
          continue;
        if (s.contains("maxLength") && s["maxLength"].is_number() && double(length) > s["maxLength"].get<double>())
          continue;
        if (std::find(not_strings.begin(), not_strings.end(), v) != not_strings.end()) continue;
        bool ok = true;
        for (const std::string& p : patterns) {
          const std::optional<bool> m = string_matches(str, p, path);
          if (!m) return std::nullopt;
          ok = ok && *m;
        }
        for (const json& p : not_patterns) {
          const std::optional<bool> m = string_matches(str, p.get<std::string>(), path);
          if (!m) return std::nullopt;
          ok = ok && !*m;
        }
        if (!ok) continue;
      }
      if (v.is_array()) {
        if (s.contains("minItems") && s["minItems"].is_number() && double(v.size()) < s["minItems"].get<double>())
          continue;
        if (s.contains("maxItems") && s["maxItems"].is_number() && double(v.size()) > s["maxItems"].get<double>())
          continue;
      }
      allowed.push_back(v);
    }
    return allowed;
  }

  // One JSON value as text, with the whitespace the grammar allows between an array's or object's tokens.
  Expr value_literal(const json& v, int32_t depth) {
    if (depth > kMaxSchemaDepth) return fail("#", "an enum/const value nested too deeply");
    if (v.is_array() && !v.empty()) {
      std::vector<Expr> items;
      for (const json& x : v) {
        if (!items.empty()) items.push_back(sep());
        items.push_back(value_literal(x, depth + 1));
      }
      return container("[", b_.sequence(std::move(items)), false, "]");
    }
    if (v.is_object() && !v.empty()) {
      // A validator compares objects whatever their order: with any_property_order, the members in any order
      // (within the any-order budgets; past them, as listed).
      if (o_.any_property_order && v.size() >= 2 && v.size() <= kAnyOrderMaxMembers) {
        std::vector<Member> listed;
        std::vector<Expr> kv;
        for (auto it = v.begin(); it != v.end(); ++it) {
          listed.push_back({it.key(), value_literal(it.value(), depth + 1), true});
          kv.push_back(b_.sequence({b_.literal(json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace)),
                                    colon(), listed.back().value}));
        }
        if (std::optional<Expr> any = any_order_object(listed, kv, std::nullopt, {}))
          return container("{", *any, false, "}");
      }
      std::vector<Expr> members;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!members.empty()) members.push_back(sep());
        members.push_back(b_.literal(json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace)));
        members.push_back(colon());
        members.push_back(value_literal(it.value(), depth + 1));
      }
      return container("{", b_.sequence(std::move(members)), false, "}");
    }
    if (v.is_array() || v.is_object())
      return container(v.is_array() ? "[" : "{", b_.nothing(), true, v.is_array() ? "]" : "}");
    return b_.literal(v.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  std::optional<bool> string_matches(const std::string& value, const std::string& pattern, const std::string& path) {
    return key_matches(value, path,
                       [&](GrammarBuilder& b) { return regex_to_expr(pattern, RegexMode::kJsonStringSearch, b); });
  }

  // ---- not ----

  // A schema equivalent to `not s`, built from the complements of its parts: a value fails s when its type is
  // not one s allows, or when it violates one of s's assertions that apply to its type. Expressible: types,
  // enum/const (strings, numbers, booleans, null), numeric bounds, lengths and counts, pattern, required,
  // properties (through their complements), anyOf/allOf/not of expressible schemas. Anything else fails naming it.
  json complement(const json& s, const std::string& path, int32_t depth) {
    if (failed()) return json(false);
    if (depth > kMaxSchemaDepth) return fail(path, "'not' nested too deeply"), json(false);
    if (++complement_steps_ > kMaxComplementSteps)
      return fail(path, "'not' of a schema too large to express its complement"), json(false);
    if (s.is_boolean()) return json(!s.get<bool>());
    if (!s.is_object()) return fail(path, "a schema must be an object or a boolean"), json(false);
    if (s.contains(kNeeds)) {
      if (!needs_well_formed(s[kNeeds]))
        return fail(path, fmt::format("'{}' must map names to lists of names", kNeeds)), json(false);
      return complement(expand_needs(s), path, depth + 1);
    }
    if (s.contains("$ref") || s.contains("allOf")) {
      std::vector<json> members;
      if (!collect_members(s, path, depth + 1, members)) return json(false);
      return complement(merge(members, path), path, depth + 1);
    }
    json rest = s;
    json branches = json::array();  // anyOf: the ways to fail s
    for (const char* key : {"anyOf", "not"}) {
      if (!s.contains(key)) continue;
      rest.erase(key);
      if (std::string(key) == "not") {
        branches.push_back(s["not"]);  // not not N: N
        continue;
      }
      if (!s[key].is_array() || s[key].empty()) return fail(path, "'anyOf' must be a non-empty array"), json(false);
      json all = json::array();
      for (size_t i = 0; i < s[key].size(); ++i)
        all.push_back(complement(s[key][i], fmt::format("{}/anyOf/{}", path, i), depth + 1));
      branches.push_back(json{{"allOf", all}});
    }
    std::set<std::string> types;  // empty: any
    for (const std::string& t : types_of(rest)) types.insert(t);
    if (types.count("integer") && !types.count("number")) {
      return fail(path,
                  "'not' of a schema of type integer is not supported (a number with a fraction is not "
                  "expressible)"),
             json(false);
    }
    if (!types.empty()) {
      json others = json::array();
      for (const std::string& t : kAllTypes)
        if (!types.count(t) && t != "integer") others.push_back(t);
      if (!others.empty()) branches.push_back(json{{"type", others}});
    }
    // The violating values of one type, restricted to s's types.
    auto typed = [&](const std::string& type, json violation) {
      if (!types.empty() && !types.count(type)) return;
      violation["type"] = type;
      branches.push_back(std::move(violation));
    };
    const bool draft4_min = rest.value("exclusiveMinimum", json()).is_boolean() && rest["exclusiveMinimum"].get<bool>();
    const bool draft4_max = rest.value("exclusiveMaximum", json()).is_boolean() && rest["exclusiveMaximum"].get<bool>();
    for (auto it = rest.begin(); it != rest.end() && !failed(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (kAnnotations.count(k) || k == "type" || k == "enum" || k == "const") continue;
      auto type = kKeywordType.find(k);
      if (type == kKeywordType.end() && !kGenericKeywords.count(k)) continue;  // unknown: asserts nothing
      auto counted = [&](const char* other, int64_t delta) {
        if (!v.is_number() || !is_integral(v) || v.get<double>() < 0) {
          fail(path, fmt::format("'{}' must be a non-negative integer", k));
          return;
        }
        const int64_t n = int64_t(v.get<double>()) + delta;
        if (n >= 0) typed(type->second, json{{other, n}});
      };
      if (k == "minimum" && v.is_number()) {
        typed("number", json{{draft4_min ? "maximum" : "exclusiveMaximum", v}});
      } else if (k == "maximum" && v.is_number()) {
        typed("number", json{{draft4_max ? "minimum" : "exclusiveMinimum", v}});
      } else if (k == "exclusiveMinimum" && v.is_number()) {
        typed("number", json{{"maximum", v}});
      } else if (k == "exclusiveMaximum" && v.is_number()) {
        typed("number", json{{"minimum", v}});
      } else if ((k == "exclusiveMinimum" || k == "exclusiveMaximum") && v.is_boolean()) {
        continue;  // a draft-04 flag of minimum/maximum
      } else if (k == "minLength" || k == "minItems" || k == "minProperties") {
        counted(k == "minLength" ? "maxLength" : k == "minItems" ? "maxItems" : "maxProperties", -1);
      } else if (k == "maxLength" || k == "maxItems" || k == "maxProperties") {
        counted(k == "maxLength" ? "minLength" : k == "maxItems" ? "minItems" : "minProperties", 1);
      } else if (k == "pattern" && v.is_string()) {
        typed("string", json{{kNotPatterns, json::array({v})}});
      } else if (k == kNotPatterns && v.is_array()) {
        for (const json& p : v) typed("string", json{{"pattern", p}});
      } else if (k == kNotStrings && v.is_array()) {
        typed("string", json{{"enum", v}});
      } else if (k == "required" && v.is_array()) {
        for (const json& r : v) {
          if (r.is_string()) typed("object", json{{"properties", {{r.get<std::string>(), false}}}});
        }
      } else if (k == "properties" && v.is_object()) {
        for (auto p = v.begin(); p != v.end(); ++p) {
          const json neg =
              complement(p.value(), fmt::format("{}/properties/{}", path, json_pointer_escape(p.key())), depth + 1);
          if (!(neg.is_boolean() && !neg.get<bool>()))
            typed("object", json{{"required", {p.key()}}, {"properties", {{p.key(), neg}}}});
        }
      } else {
        fail(path, fmt::format("'not' of a schema with '{}' is not supported", k));
      }
    }
    if (rest.contains("enum") || rest.contains("const")) {
      const json values = rest.contains("const") ? json::array({rest["const"]}) : rest["enum"];
      if (!values.is_array()) return fail(path, "'enum' must be an array"), json(false);
      for (const std::string t : {"string", "number", "boolean", "null", "object", "array"}) {
        json listed = json::array();
        for (const json& v : values)
          if (value_has_type(v, t)) listed.push_back(v);
        if (listed.empty()) {
          typed(t, json::object());
        } else if (t == "string") {
          typed(t, json{{kNotStrings, listed}});
        } else if (t == "number") {
          // The open intervals between the listed numbers.
          std::vector<double> xs;
          for (const json& v : listed) xs.push_back(v.get<double>());
          std::sort(xs.begin(), xs.end());
          xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
          for (size_t i = 0; i <= xs.size(); ++i) {
            json range = json::object();
            if (i > 0) range["exclusiveMinimum"] = xs[i - 1];
            if (i < xs.size()) range["exclusiveMaximum"] = xs[i];
            typed(t, range);
          }
        } else if (t == "boolean") {
          json other = json::array();
          for (const bool b : {false, true})
            if (std::find(listed.begin(), listed.end(), json(b)) == listed.end()) other.push_back(b);
          if (!other.empty()) typed(t, json{{"enum", other}});
        } else if (t != "null") {
          fail(path, fmt::format("'not' of an enum/const listing an {} is not supported", t));
        }
      }
    }
    if (failed()) return json(false);
    if (branches.empty()) return json(false);
    return branches.size() == 1 ? branches[0] : json{{"anyOf", branches}};
  }

  // A non-negative integer keyword, at most kMaxCount; nullopt (and fail) otherwise.
  std::optional<uint64_t> count_keyword(const json& s, const char* key, const std::string& path) {
    const json& v = s[key];
    if (!v.is_number() || !is_integral(v) || v.get<double>() < 0) {
      fail(path, fmt::format("'{}' must be a non-negative integer", key));
      return std::nullopt;
    }
    const double d = v.get<double>();
    if (d > double(kMaxCount)) {
      fail(path, fmt::format("'{}' {} is larger than the enforceable limit {}", key, d, kMaxCount));
      return std::nullopt;
    }
    return uint64_t(d);
  }

  // A property an object lists (in `properties`, or only in `required`) and its value's grammar.
  struct Member {
    std::string key;
    Expr value;
    bool required;
  };

  Expr convert_object(const json& s, const std::string& path, int32_t depth) {
    const json props = s.value("properties", json::object());
    if (!props.is_object()) return fail(path, "'properties' must be an object");
    std::vector<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return fail(path, "'required' must be an array");
      for (const json& r : s["required"]) {
        if (!r.is_string()) return fail(path, "'required' must list strings");
        if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
          required.push_back(r.get<std::string>());
      }
    }
    // Extra properties: true or a schema allows them; absent allows any value unless the options close objects.
    std::optional<json> additional;
    if (!s.contains("additionalProperties") && !o_.closed_objects) additional = json(true);
    if (s.contains("additionalProperties")) {
      const json& ap = s["additionalProperties"];
      if (!ap.is_boolean() && !ap.is_object())
        return fail(path, "'additionalProperties' must be a boolean or a schema");
      if (!(ap.is_boolean() && !ap.get<bool>())) additional = ap;
    }
    std::vector<std::pair<std::string, json>> patterns;
    if (s.contains("patternProperties")) {
      const json& pp = s["patternProperties"];
      if (!pp.is_object()) return fail(path, "'patternProperties' must be an object");
      for (auto it = pp.begin(); it != pp.end(); ++it) {
        if (!it.value().is_boolean() && !it.value().is_object())
          return fail(path, "'patternProperties' values must be schemas");
        patterns.push_back({it.key(), it.value()});
      }
      if (patterns.size() > kMaxPatterns)
        return fail(path, fmt::format("'patternProperties' with more than {} patterns is not supported", kMaxPatterns));
    }
    const json* names =
        s.contains("propertyNames") && !every_string_matches(s["propertyNames"]) ? &s["propertyNames"] : nullptr;
    // A named property's schema: its `properties` entry and every pattern matching its name (allOf), else the
    // additionalProperties schema; false when propertyNames rejects the name or nothing allows it.
    auto named_schema = [&](const std::string& key, const json* declared) -> json {
      json all = json::array();
      if (declared) all.push_back(*declared);
      for (const auto& [pattern, schema] : patterns) {
        const std::optional<bool> m = key_matches(
            key, path, [&](GrammarBuilder& b) { return regex_to_expr(pattern, RegexMode::kJsonStringSearch, b); });
        if (!m) return json(false);
        if (*m) all.push_back(schema);
      }
      if (all.empty()) {
        if (!additional) return json(false);
        all.push_back(*additional);
      }
      if (names) {
        const std::optional<bool> m =
            key_matches(key, path, [&](GrammarBuilder& b) { return key_language(*names, b); });
        if (!m || !*m) return json(false);
      }
      return all.size() == 1 ? all[0] : json{{"allOf", all}};
    };
    std::vector<Member> members;
    for (auto it = props.begin(); it != props.end(); ++it) {
      const bool req = std::find(required.begin(), required.end(), it.key()) != required.end();
      const std::string ppath = fmt::format("{}/properties/{}", path, json_pointer_escape(it.key()));
      const Expr value = patterns.empty() && !names
                             ? convert_schema(it.value(), ppath, depth + 1)
                             : convert_schema(named_schema(it.key(), &it.value()), ppath, depth + 1);
      members.push_back({it.key(), value, req});
    }
    // A required property not in `properties` takes the patterns' schemas or the additionalProperties one (any
    // value when that is absent: only an explicit false forbids it).
    const bool closed = s.contains("additionalProperties") && !additional;
    for (const std::string& r : required) {
      if (props.contains(r)) continue;
      if (closed && patterns.empty()) {
        return fail(
            path, fmt::format("required property '{}' is not in 'properties' and 'additionalProperties' is false", r));
      }
      members.push_back({r, convert_schema(named_schema(r, nullptr), path + "/additionalProperties", depth + 1), true});
    }
    if (failed()) return b_.nothing();
    const bool extras = additional || !patterns.empty();
    const size_t num_required =
        size_t(std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; }));
    bool can_be_empty = num_required == 0;
    if (s.contains("minProperties")) {
      const std::optional<uint64_t> min = count_keyword(s, "minProperties", path);
      if (!min) return b_.nothing();
      if (*min == 1) can_be_empty = false;
      if (*min > std::max<uint64_t>(num_required, 1))
        return fail(path, "'minProperties' above the number of required properties (and above 1) is not supported");
    }
    if (s.contains("maxProperties")) {
      const std::optional<uint64_t> max = count_keyword(s, "maxProperties", path);
      if (!max) return b_.nothing();
      if (extras || *max < members.size()) {
        return fail(path, "'maxProperties' below the number of properties that may appear is not supported");
      }
    }

    // Dependencies of names on names (kNeeds), as (trigger bit, needed bits) over the members; enforced only by an
    // any-order object that tracks every member, else the object is converted with each as a choice instead.
    std::vector<std::pair<uint32_t, uint32_t>> needs;
    if (s.contains(kNeeds) && !needs_well_formed(s[kNeeds]))
      return fail(path, fmt::format("'{}' must map names to lists of names", kNeeds));
    if (s.contains(kNeeds)) {
      auto bit_of = [&](const std::string& key) -> uint32_t {
        for (size_t i = 0; i < members.size() && i < 32; ++i)
          if (members[i].key == key) return 1u << i;
        return 0;
      };
      for (auto d = s[kNeeds].begin(); d != s[kNeeds].end(); ++d) {
        uint32_t trigger = bit_of(d.key()), needed = 0;
        for (const json& name : d.value()) {
          const uint32_t bit = bit_of(name.get<std::string>());
          if (bit == 0) trigger = 0;
          needed |= bit;
        }
        if (trigger == 0) return object_with_expanded_needs(s, path, depth);
        needs.push_back({trigger, needed});
      }
    }

    std::vector<Expr> kv;
    for (const Member& m : members) kv.push_back(b_.sequence({b_.literal(json(m.key).dump()), colon(), m.value}));
    std::optional<Expr> extra;
    if (extras) {
      std::vector<std::string> keys;
      for (const Member& m : members) keys.push_back(m.key);
      extra = extra_members(keys, patterns, additional, names, path, depth);
      if (failed()) return b_.nothing();
    }
    const size_t n = members.size();
    if (o_.any_property_order && (n >= 2 || (n == 1 && extra))) {
      if (std::optional<Expr> any = any_order_object(members, kv, extra, needs))
        return container("{", *any, can_be_empty, "}");
      if (!needs.empty()) return object_with_expanded_needs(s, path, depth);
      ++notes_.objects_schema_order;
    }
    // Here a dependency's trigger and needed names are the one member (or it has none): it holds.
    // tail[i]: members i.. after at least one member was written (each behind a comma).
    size_t first_required = n;
    for (size_t i = 0; i < n; ++i) {
      if (members[i].required) {
        first_required = i;
        break;
      }
    }
    const bool use_rules = (first_required + 1) * n > kInlineMemberLimit;
    std::vector<Expr> tail(n + 1);
    tail[n] = extra ? b_.star(b_.sequence({sep(), *extra})) : b_.empty();
    for (size_t i = n; i-- > 0;) {
      const Expr piece = b_.sequence({sep(), kv[i]});
      Expr body = b_.sequence({members[i].required ? piece : b_.optional(piece), tail[i + 1]});
      if (use_rules) {
        const int32_t rule = b_.add_rule(b_.unique_rule_name("members"));
        b_.set_body(rule, body);
        body = b_.rule_ref(rule);
      }
      tail[i] = body;
    }
    // The first member written: any optional one before the first required one, or that required one.
    std::vector<Expr> firsts;
    for (size_t i = 0; i < n && i <= first_required; ++i) firsts.push_back(b_.sequence({kv[i], tail[i + 1]}));
    if (extra && first_required == n) firsts.push_back(b_.sequence({*extra, tail[n]}));
    return container("{", b_.choice(std::move(firsts)), can_be_empty, "}");
  }

  // An object's members in any order, or nullopt when its required ones are too many for the budgets. Tracked
  // members (every required one; the optional ones too in an object of at most kAnyOrderMaxMembers, in
  // `properties` order while the budgets allow) come at most once each; the optional ones left untracked join the
  // extra members, which come any number of times anywhere between. So only an untracked name may be written twice, each time with a value its schema allows: a parser
  // keeps one of them (JSON.parse and json.loads the last), which validates; and fewer distinct names than
  // written break no count (minProperties counts only required names or asks for one; maxProperties is refused
  // unless every listed name may appear at once).
  // Dependencies (`needs`) are enforced only when every member is tracked: else nullopt.
  std::optional<Expr> any_order_object(const std::vector<Member>& members, const std::vector<Expr>& kv,
                                       std::optional<Expr> extra,
                                       const std::vector<std::pair<uint32_t, uint32_t>>& needs) {
    auto states_of = [](uint64_t t) { return t == 0 ? 2 : (t << (t - 1)) + (uint64_t(2) << t); };
    const size_t n = members.size();
    const size_t num_required =
        size_t(std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; }));
    // Optional members are tracked only while a quarter of the budget stays for the required ones of the objects
    // still to come (inner objects are converted first).
    const uint64_t left = kAnyOrderStateBudget - any_order_states_;
    // A larger object tracks its required members alone: its masks reach across every tracked set's rule.
    if (num_required > kAnyOrderMaxMembers) return std::nullopt;
    size_t tracked = n <= kAnyOrderMaxMembers ? n : num_required;
    while (tracked > num_required && states_of(tracked) + kAnyOrderStateBudget / 4 > left) --tracked;
    if (tracked < num_required || states_of(tracked) > left) return std::nullopt;
    if (!needs.empty() && tracked < n) return std::nullopt;
    any_order_states_ += states_of(tracked);
    ++notes_.objects_any_order;
    std::vector<Member> kept;
    std::vector<Expr> kept_kv, loose;
    size_t optional_kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (members[i].required || optional_kept++ < tracked - num_required) {
        kept.push_back(members[i]);
        kept_kv.push_back(kv[i]);
      } else {
        loose.push_back(kv[i]);
      }
    }
    if (!loose.empty()) {
      ++notes_.objects_repeatable;
      if (extra) loose.push_back(*extra);
      extra = b_.choice(std::move(loose));
    }
    return any_order_members(kept, kept_kv, extra, needs);
  }

  // An object with dependencies of names on names that its member sets cannot enforce: each dependency a choice of
  // its trigger absent, or present with the names it needs (combined as allOf members' anyOf lists are).
  Expr object_with_expanded_needs(const json& s, const std::string& path, int32_t depth) {
    json expanded = expand_needs(s);
    expanded["type"] = "object";
    return convert_schema(expanded, path, depth + 1);
  }
  static bool needs_well_formed(const json& v) {
    if (!v.is_object()) return false;
    for (auto d = v.begin(); d != v.end(); ++d) {
      if (!d.value().is_array()) return false;
      for (const json& name : d.value())
        if (!name.is_string()) return false;
    }
    return true;
  }
  static json expand_needs(const json& s) {
    if (!s.is_object() || !s.contains(kNeeds) || !needs_well_formed(s[kNeeds])) return s;
    json expanded = s;
    expanded.erase(kNeeds);
    json all = expanded.contains("allOf") ? expanded["allOf"] : json::array();
    for (auto d = s[kNeeds].begin(); d != s[kNeeds].end(); ++d) {
      json present = {{"required", json::array({d.key()})}};
      for (const json& name : d.value()) present["required"].push_back(name);
      all.push_back(json{{"anyOf", {json{{"properties", {{d.key(), false}}}}, present}}});
    }
    expanded["allOf"] = all;
    return expanded;
  }

  // An object's members in any order: each listed one at most once, every required one present, extra ones (when
  // `extra` is set) anywhere between. rest[S], a rule per set S of listed members already written: more extra
  // members, then a listed member not in S and rest[S + it], or the end once S holds every required member. Each
  // member (with its value) is a rule of its own, called from every rest[S], so the value's automaton exists once.
  // The end also needs, for each (trigger, needed) of `needs`, the needed members in S whenever the trigger is.
  Expr any_order_members(const std::vector<Member>& members, const std::vector<Expr>& kv, std::optional<Expr> extra,
                         const std::vector<std::pair<uint32_t, uint32_t>>& needs = {}) {
    const size_t n = members.size();
    uint32_t required = 0;
    for (size_t i = 0; i < n; ++i)
      if (members[i].required) required |= 1u << i;
    auto rule_of = [&](Expr body) {
      const int32_t rule = b_.add_rule(b_.unique_rule_name("member"));
      b_.set_body(rule, body);
      return rule;
    };
    // first[i]: member i as the object's first; later[i]: behind a comma.
    std::vector<Expr> first(n), later(n);
    for (size_t i = 0; i < n; ++i) {
      const int32_t rule = rule_of(kv[i]);
      first[i] = b_.rule_ref(rule);
      later[i] = b_.rule_ref(rule_of(b_.sequence({sep(), first[i]})));
    }
    std::optional<Expr> extra_first, extra_later;
    if (extra) {
      const int32_t rule = rule_of(*extra);
      extra_first = b_.rule_ref(rule);
      extra_later = b_.rule_ref(rule_of(b_.sequence({sep(), *extra_first})));
    }
    const uint32_t num_sets = 1u << n;
    std::vector<int32_t> rest(num_sets);
    for (uint32_t set = 0; set < num_sets; ++set) rest[set] = b_.add_rule(b_.unique_rule_name("members-rest"));
    for (uint32_t set = 0; set < num_sets; ++set) {
      std::vector<Expr> next;
      for (size_t i = 0; i < n; ++i)
        if (!(set & (1u << i))) next.push_back(b_.sequence({later[i], b_.rule_ref(rest[set | (1u << i)])}));
      const bool needs_met = std::all_of(needs.begin(), needs.end(), [&](const std::pair<uint32_t, uint32_t>& d) {
        return !(set & d.first) || (set & d.second) == d.second;
      });
      if ((set & required) == required && needs_met) next.push_back(b_.empty());
      const Expr body = b_.choice(std::move(next));
      b_.set_body(rest[set], extra_later ? b_.sequence({b_.star(*extra_later), body}) : body);
    }
    std::vector<Expr> firsts;
    for (size_t i = 0; i < n; ++i) firsts.push_back(b_.sequence({first[i], b_.rule_ref(rest[1u << i])}));
    if (extra_first) firsts.push_back(b_.sequence({*extra_first, b_.rule_ref(rest[0])}));
    return b_.choice(std::move(firsts));
  }

  // An extra property (a name not in `keys`), ": " and its value. Each subset of the patterns is one kind of name:
  // those matching exactly that subset, whose value satisfies their schemas; names matching none take
  // `additional`. propertyNames (`names`) restricts every kind.
  Expr extra_members(const std::vector<std::string>& keys, const std::vector<std::pair<std::string, json>>& patterns,
                     const std::optional<json>& additional, const json* names, const std::string& path, int32_t depth) {
    std::vector<Expr> alts;
    for (uint32_t subset = 0; subset < (1u << patterns.size()) && !failed(); ++subset) {
      if (subset == 0 && !additional) continue;
      std::vector<Expr> in = {not_keys(keys)};
      std::vector<Expr> out;
      json all = json::array();
      for (size_t i = 0; i < patterns.size(); ++i) {
        Result<Expr> e = regex_to_expr(patterns[i].first, RegexMode::kJsonStringSearch, b_);
        if (!e.ok()) return fail(fmt::format("{}/patternProperties", path), e.error());
        if (subset & (1u << i)) {
          in.push_back(*e);
          all.push_back(patterns[i].second);
        } else {
          out.push_back(*e);
        }
      }
      if (names) {
        Result<Expr> e = key_language(*names, b_);
        if (!e.ok()) return fail(path + "/propertyNames", e.error());
        in.push_back(*e);
      }
      Expr key = b_.intersection(std::move(in));
      if (!out.empty()) key = b_.difference(key, b_.choice(std::move(out)));
      const json value = subset == 0 ? *additional : all.size() == 1 ? all[0] : json{{"allOf", all}};
      const std::string vpath =
          subset == 0 ? path + "/additionalProperties" : fmt::format("{}/patternProperties", path);
      alts.push_back(
          b_.sequence({b_.literal("\""), key, b_.literal("\""), colon(), convert_schema(value, vpath, depth + 1)}));
    }
    return b_.choice(std::move(alts));
  }

  // The JSON string content (as json_string_chars spells it) of the names `schema` (a propertyNames) allows: a
  // string schema's pattern, format and lengths, or an enum/const of names. Other keywords are refused by name.
  Result<Expr> key_language(const json& schema, GrammarBuilder& b) {
    if (schema.is_boolean()) return schema.get<bool>() ? b.star(json_string_any_char(b)) : b.nothing();
    if (!schema.is_object()) return make_error("a schema must be an object or a boolean", StatusCode::kInvalidArgument);
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      const std::string& k = it.key();
      if (k == "type") {
        const std::vector<std::string> types = types_of(schema);
        if (std::find(types.begin(), types.end(), "string") == types.end()) return b.nothing();
      } else if (!kAnnotations.count(k) && !kStringKeywords.count(k) && k != "enum" && k != "const") {
        return make_error(fmt::format("'{}' in 'propertyNames' is not supported", k), StatusCode::kInvalidArgument);
      }
    }
    std::vector<Expr> parts;
    if (schema.contains("enum") || schema.contains("const")) {
      const json values = schema.contains("const") ? json::array({schema["const"]}) : schema["enum"];
      if (!values.is_array()) return make_error("'enum' must be an array", StatusCode::kInvalidArgument);
      std::vector<Expr> names;
      for (const json& v : values) {
        if (!v.is_string()) continue;
        const std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
        names.push_back(b.literal(std::string_view(text).substr(1, text.size() - 2)));
      }
      parts.push_back(b.choice(std::move(names)));
    }
    Result<std::vector<Expr>> string_parts = string_content_parts(schema, b);
    if (!string_parts.ok()) return string_parts.status();
    for (const Expr e : *string_parts) parts.push_back(e);
    if (parts.empty()) return b.star(json_string_any_char(b));
    return b.intersection(std::move(parts));
  }

  // Whether the name `key` is in the language `make` builds (a regex or key_language), decided by compiling their
  // intersection in a builder of its own; nullopt (and fail) when that compile fails for another reason.
  std::optional<bool> key_matches(const std::string& key, const std::string& path,
                                  const std::function<Result<Expr>(GrammarBuilder&)>& make) {
    GrammarBuilder b;
    Result<Expr> language = make(b);
    if (!language.ok()) {
      fail(path, language.error());
      return std::nullopt;
    }
    const std::string text = json(key).dump(-1, ' ', false, json::error_handler_t::replace);
    const int32_t root = b.add_rule("root");
    b.set_body(root, b.intersection({*language, b.literal(std::string_view(text).substr(1, text.size() - 2))}));
    Result<Grammar> g = b.build(root);
    if (g.ok()) return true;
    if (g.error().find("matches no string") != std::string::npos) return false;
    fail(path, g.error());
    return std::nullopt;
  }

  // Canonical JSON string content whose decoded value is none of `keys`: a path of the keys' trie that ends at a
  // node no key ends at, or that leaves the trie with some character and goes on with any text. A character no key
  // uses leaves every node the same way, so it is read after the trie as one piece, and the text after leaving is
  // one piece too: the automaton grows with the trie, not with the trie times a character's automaton.
  Expr not_keys(const std::vector<std::string>& keys) {
    struct Node {
      std::map<uint32_t, size_t> children;
      bool terminal = false;
    };
    std::vector<Node> trie(1);
    CodePointSet used;  // every character on a trie edge
    for (const std::string& k : keys) {
      size_t node = 0, pos = 0;
      uint32_t cp;
      while (pos < k.size() && decode_utf8(k, pos, cp)) {
        auto it = trie[node].children.find(cp);
        if (it == trie[node].children.end()) {
          trie.push_back({});
          it = trie[node].children.emplace(cp, trie.size() - 1).first;
          used.add(cp, cp);
        }
        node = it->second;
      }
      trie[node].terminal = true;
    }
    // The trie's paths from `node` that end where `end` says (kept whole, cut short, or left by a used character).
    enum class Ends { kNotAKey, kAnywhere, kLeavingByUsed };
    std::function<Expr(size_t, int32_t, Ends)> paths = [&](size_t node, int32_t level, Ends end) -> Expr {
      if (level > 1000) return fail("#", "a property name longer than 1000 characters");
      std::vector<Expr> alts;
      if ((end == Ends::kNotAKey && !trie[node].terminal) || end == Ends::kAnywhere) alts.push_back(b_.empty());
      if (end == Ends::kLeavingByUsed) {
        CodePointSet leaving = used;
        for (const auto& [cp, child] : trie[node].children) leaving.remove(cp, cp);
        if (!leaving.empty()) alts.push_back(json_string_chars(b_, leaving));
      }
      for (const auto& [cp, child] : trie[node].children)
        alts.push_back(b_.sequence({json_string_chars(b_, CodePointSet::single(cp)), paths(child, level + 1, end)}));
      return alts.empty() ? b_.nothing() : b_.choice(std::move(alts));
    };
    const CodePointSet unused = used.complement();
    std::vector<Expr> leave = {paths(0, 0, Ends::kLeavingByUsed)};
    if (!unused.empty()) leave.push_back(b_.sequence({paths(0, 0, Ends::kAnywhere), json_string_chars(b_, unused)}));
    const Expr any_tail = b_.star(json_string_chars(b_, CodePointSet::all()));
    return b_.choice({paths(0, 0, Ends::kNotAKey), b_.sequence({b_.choice(std::move(leave)), any_tail})});
  }

  Expr convert_array(const json& s, const std::string& path, int32_t depth) {
    std::vector<Expr> prefix;
    std::optional<json> rest;  // the schema of items after the prefix; nullopt: none allowed
    const json* prefix_list = nullptr;
    const char* prefix_key = nullptr;
    if (s.contains("prefixItems")) {
      prefix_list = &s["prefixItems"];
      prefix_key = "prefixItems";
      rest = s.contains("items") ? s["items"] : json(true);  // absent: any items after the list
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix_list = &s["items"];
      prefix_key = "items";
      rest = s.contains("additionalItems") ? s["additionalItems"] : json(true);
    } else {
      rest = s.contains("items") ? s["items"] : json(true);
    }
    if (prefix_list) {
      if (!prefix_list->is_array()) return fail(path, fmt::format("'{}' must be an array", prefix_key));
      for (size_t i = 0; i < prefix_list->size(); ++i) {
        prefix.push_back(convert_schema((*prefix_list)[i], fmt::format("{}/{}/{}", path, prefix_key, i), depth + 1));
      }
    }
    if (rest && !rest->is_boolean() && !rest->is_object()) return fail(path, "'items' must be a schema");
    if (rest && rest->is_boolean() && !rest->get<bool>()) rest.reset();
    uint64_t min = 0;
    std::optional<uint64_t> max;
    if (s.contains("minItems")) {
      const std::optional<uint64_t> v = count_keyword(s, "minItems", path);
      if (!v) return b_.nothing();
      min = *v;
    }
    if (s.contains("maxItems")) {
      max = count_keyword(s, "maxItems", path);
      if (!max) return b_.nothing();
    }
    const bool unique =
        s.contains("uniqueItems") && s["uniqueItems"].is_boolean() && s["uniqueItems"].get<bool>() && (!max || *max > 1);
    if (s.contains("contains")) {
      if (prefix_list) return fail(path, fmt::format("'contains' beside '{}' is not supported", prefix_key));
      if (unique) return fail(path, "'contains' beside 'uniqueItems' is not supported");
      if (max) return fail(path, "'contains' beside 'maxItems' is not supported");
      return contains_array(s, rest, min, path, depth);
    }
    if (unique && (prefix_list || rest)) {
      if (prefix_list) return fail(path, fmt::format("'uniqueItems' beside '{}' is not supported", prefix_key));
      const std::optional<std::vector<json>> values = finite_scalars(*rest, path + "/items", depth + 1);
      if (failed()) return b_.nothing();
      if (!values)
        return fail(path,
                    "'uniqueItems' is supported only for items of a few listed scalars (enum, const, boolean, null) "
                    "or with maxItems <= 1");
      return unique_items(*values, min, max ? *max : kUnbounded, path);
    }
    // The rest's item is written once per item minItems/maxItems count past the prefix, and once more for an
    // unbounded tail (a first item comes apart from the tail's loop): more than a plain array's two copies make it
    // a rule.
    const uint64_t k = prefix.size();
    const uint64_t rest_copies = max ? *max - std::min<uint64_t>(*max, k)
                                     : std::max<uint64_t>(min, std::max<uint64_t>(k, 1)) - k + 1;
    const Expr rest_item = rest ? convert_schema(*rest, path + (prefix_list ? "/additionalItems" : "/items"), depth + 1,
                                                 -1, rest_copies > 2)
                                : b_.nothing();
    if (failed()) return b_.nothing();
    const uint64_t limit = max ? *max : ~uint64_t(0);
    // after(i): items i.. (1-based) once item i-1 was written, each behind a comma.
    std::function<Expr(uint64_t)> after = [&](uint64_t i) -> Expr {
      if (i > limit) return b_.empty();
      if (i <= k) {
        const Expr piece = b_.sequence({sep(), prefix[i - 1], after(i + 1)});
        return i <= min ? piece : b_.optional(piece);
      }
      if (!rest) return min >= i ? b_.nothing() : b_.empty();
      const uint64_t rest_min = min >= i ? min - i + 1 : 0;
      const uint64_t rest_max = max ? *max - i + 1 : kUnbounded;
      return b_.repeat(b_.sequence({sep(), rest_item}), uint32_t(rest_min), uint32_t(rest_max));
    };
    Expr nonempty = b_.nothing();
    if (limit >= 1) {
      if (k >= 1) {
        nonempty = b_.sequence({prefix[0], after(2)});
      } else if (rest) {
        nonempty = b_.sequence({rest_item, after(2)});
      }
    }
    return container("[", nonempty, min == 0, "]");
  }

  // An array of distinct values out of `values` (distinct scalars), min..max of them: one rule per set of values
  // already written, which offers each value not in it.
  Expr unique_items(const std::vector<json>& values, uint64_t min, uint64_t max, const std::string& path) {
    const size_t k = values.size();
    max = std::min<uint64_t>(max, k);
    if (min > max) return b_.nothing();
    uint64_t sets = 0, states = 0, binomial = 1;  // sets of at most max values, and their rules' states
    for (uint64_t size = 0; size <= max && sets <= kUniqueMaxSets; ++size) {
      sets += binomial;
      states += binomial * (k - size + 2);
      binomial = binomial * (k - size) / (size + 1);
    }
    if (sets > kUniqueMaxSets || states > kAnyOrderStateBudget - any_order_states_)
      return fail(path, fmt::format("'uniqueItems' over {} values{} is over the grammar's budget", k,
                                    max < k ? fmt::format(" (at most {} of them)", max) : std::string()));
    any_order_states_ += states;
    std::vector<Expr> literal;
    for (const json& v : values) literal.push_back(value_literal(v, 0));
    std::unordered_map<uint32_t, int32_t> rule_of;
    std::function<int32_t(uint32_t)> rest = [&](uint32_t set) -> int32_t {
      if (auto it = rule_of.find(set); it != rule_of.end()) return it->second;
      const int32_t rule = b_.add_rule(b_.unique_rule_name("unique-items"));
      rule_of[set] = rule;
      const uint64_t size = uint64_t(std::popcount(set));
      std::vector<Expr> next;
      for (size_t i = 0; i < k && size < max; ++i)
        if (!(set & (1u << i))) next.push_back(b_.sequence({sep(), literal[i], b_.rule_ref(rest(set | (1u << i)))}));
      if (size >= min) next.push_back(b_.empty());
      b_.set_body(rule, b_.choice(std::move(next)));
      return rule;
    };
    std::vector<Expr> firsts;
    for (size_t i = 0; i < k && max >= 1; ++i) firsts.push_back(b_.sequence({literal[i], b_.rule_ref(rest(1u << i))}));
    return container("[", b_.choice(std::move(firsts)), min == 0, "]");
  }

  // The values `item` allows when they are a finite set of scalars (an enum or const of strings, numbers, booleans
  // and null; type boolean or null), each once by JSON's equality (1 and 1.0 are one value); nullopt otherwise.
  std::optional<std::vector<json>> finite_scalars(const json& item, const std::string& path, int32_t depth) {
    std::vector<json> members;
    if (!collect_members(item, path, depth, members)) return std::nullopt;
    const json s = merge(members, path);
    if (failed()) return std::nullopt;
    if (s.is_boolean()) return s.get<bool>() ? std::nullopt : std::optional(std::vector<json>{});
    if (s.contains("anyOf") || s.contains("oneOf")) return std::nullopt;
    json listed = json::array();
    if (s.contains("enum") || s.contains("const")) {
      std::optional<json> v = enum_values(s, path);
      if (!v) return std::nullopt;
      listed = std::move(*v);
    } else {
      // Only a type of finitely many values; every keyword beside it constrains other types.
      const std::vector<std::string> types = types_of(s);
      if (types.empty()) return std::nullopt;
      for (const std::string& t : types) {
        if (t == "boolean") listed.insert(listed.end(), {json(false), json(true)});
        else if (t == "null") listed.push_back(nullptr);
        else return std::nullopt;
      }
    }
    std::vector<json> distinct;
    for (const json& v : listed) {
      if (v.is_object() || v.is_array()) return std::nullopt;
      if (std::find(distinct.begin(), distinct.end(), v) == distinct.end()) distinct.push_back(v);
    }
    if (distinct.size() > kUniqueMaxValues) return std::nullopt;
    return distinct;
  }

  // An array with minContains..maxContains items matching `contains` (1.. when absent), every item of `rest`'s
  // schema (none when nullopt), at least `min` items in all (at most minContains: more is refused). Items are
  // matching ones (item and contains) and the others (item and the complement of contains), counted.
  Expr contains_array(const json& s, const std::optional<json>& rest, uint64_t min, const std::string& path,
                      int32_t depth) {
    uint64_t lo = 1;
    uint64_t hi = kUnbounded;
    if (s.contains("minContains")) {
      const std::optional<uint64_t> v = count_keyword(s, "minContains", path);
      if (!v) return b_.nothing();
      lo = *v;
    }
    if (s.contains("maxContains")) {
      const std::optional<uint64_t> v = count_keyword(s, "maxContains", path);
      if (!v) return b_.nothing();
      hi = *v;
    }
    if (min > lo) return fail(path, "'minItems' above 'minContains' (1 when absent) beside 'contains' is not supported");
    if (lo > hi) return b_.nothing();
    if (!rest) return lo == 0 ? container("[", b_.nothing(), true, "]") : b_.nothing();
    const std::string cpath = path + "/contains";
    const json others = complement(s["contains"], cpath, depth + 1);
    if (failed()) {
      *error_ = fmt::format("schema at {}: 'contains' is supported where its complement is expressible ({})", path,
                            *error_);
      return b_.nothing();
    }
    auto item_rule = [&](const json& both, const char* name) -> std::optional<Expr> {
      if (both.is_boolean() && !both.get<bool>()) return std::nullopt;
      const int32_t rule = b_.add_rule(b_.unique_rule_name(name));
      b_.set_body(rule, convert_schema(json{{"allOf", json::array({*rest, both})}}, cpath, depth + 1));
      return b_.rule_ref(rule);
    };
    const std::optional<Expr> match = item_rule(s["contains"], "contained");
    const std::optional<Expr> other = item_rule(others, "not-contained");
    if (failed()) return b_.nothing();
    const Expr others_after = other ? b_.star(b_.sequence({sep(), *other})) : b_.empty();
    std::vector<Expr> starts;
    if (match) {
      const Expr block = b_.sequence({sep(), *match, others_after});  // a match behind a comma, then others
      if (other) starts.push_back(b_.sequence({*other, others_after, b_.repeat(block, uint32_t(lo), uint32_t(hi))}));
      if (hi >= 1) {
        const uint32_t more_max = hi == kUnbounded ? kUnbounded : uint32_t(hi - 1);
        starts.push_back(b_.sequence({*match, others_after, b_.repeat(block, uint32_t(lo > 0 ? lo - 1 : 0), more_max)}));
      }
    } else if (lo == 0 && other) {
      starts.push_back(b_.sequence({*other, others_after}));
    }
    return container("[", b_.choice(std::move(starts)), lo == 0, "]");
  }

  // A string schema's grammar. Each distinct set of string keywords is one rule, called from every place that
  // uses it: twenty properties of maxLength 100 share one automaton of a hundred characters instead of copying it
  // twenty times (the copies' states never merge: each copy is its own part of the automaton).
  Expr convert_string(const json& s, const std::string& path) {
    json keywords = json::object();
    for (const std::string& k : kStringKeywords) {
      if (s.contains(k)) keywords[k] = s[k];
    }
    const std::string key = keywords.dump(-1, ' ', false, json::error_handler_t::replace);
    if (auto it = string_rules_.find(key); it != string_rules_.end()) return b_.rule_ref(it->second);
    Expr content;
    if (const std::optional<std::pair<uint64_t, uint64_t>> lengths = long_lengths(s)) {
      if (lengths->first > lengths->second) return b_.nothing();
      content = long_string(lengths->first, lengths->second);
    } else {
      Result<std::vector<Expr>> parts = string_content_parts(s, b_);
      if (!parts.ok()) return fail(path, parts.error());
      if (parts->empty()) {
        string_rules_.emplace(key, string_rule());
        return b_.rule_ref(string_rule());
      }
      content = b_.sequence({b_.literal("\""), b_.intersection(std::move(*parts)), b_.literal("\"")});
    }
    const int32_t rule = b_.add_rule(b_.unique_rule_name("string-constrained"));
    b_.set_body(rule, content);
    string_rules_.emplace(key, rule);
    return b_.rule_ref(rule);
  }

  // minLength/maxLength (maxLength kUnbounded when absent) when one is kLongStringFrom or more (each at most
  // kMaxLongLength) and nothing else constrains the content (a pattern's or format's intersection needs the lengths
  // inline).
  std::optional<std::pair<uint64_t, uint64_t>> long_lengths(const json& s) {
    if (s.contains("pattern") || s.contains(kNotPatterns) || s.contains(kNotStrings)) return std::nullopt;
    if (s.contains("format") && (!s["format"].is_string() || kFormats.count(s["format"].get<std::string>()) ||
                                 kUnsupportedFormats.count(s["format"].get<std::string>())))
      return std::nullopt;
    uint64_t bound[2] = {0, kUnbounded};
    bool long_one = false;
    for (const int i : {0, 1}) {
      const char* key = i == 0 ? "minLength" : "maxLength";
      if (!s.contains(key)) continue;
      const json& v = s[key];
      if (!v.is_number() || !is_integral(v) || v.get<double>() < 0 || v.get<double>() > double(kMaxLongLength))
        return std::nullopt;  // string_content_parts names the problem
      bound[i] = uint64_t(v.get<double>());
      long_one = long_one || bound[i] >= kLongStringFrom;
    }
    if (!long_one) return std::nullopt;
    return std::pair{bound[0], bound[1]};
  }

  // A JSON string of lo..hi code points (hi kUnbounded: no maximum), hi beyond what a counted repeat copies: q full
  // blocks of kLengthBlock characters (a rule, each call one automaton edge) and a shorter rest, so the automaton
  // grows with hi / kLengthBlock + kLengthBlock rather than with hi.
  Expr long_string(uint64_t lo, uint64_t hi) {
    const Expr c = json_string_chars(b_, CodePointSet::all());
    if (length_block_rule_ < 0) {
      length_block_rule_ = b_.add_rule(b_.unique_rule_name("string-block"));
      b_.set_body(length_block_rule_, b_.repeat(c, kLengthBlock, kLengthBlock));
    }
    const Expr block = b_.rule_ref(length_block_rule_);
    auto blocks = [&](uint64_t min, uint64_t max) { return b_.repeat(block, uint32_t(min), uint32_t(max)); };
    auto chars = [&](uint64_t min, uint64_t max) { return b_.repeat(c, uint32_t(min), uint32_t(max)); };
    const uint64_t qlo = lo / kLengthBlock, rlo = lo % kLengthBlock;
    Expr content;
    if (hi == kUnbounded) {
      content = b_.sequence({blocks(qlo, qlo), chars(rlo, rlo), b_.star(c)});
    } else {
      const uint64_t qhi = hi / kLengthBlock, rhi = hi % kLengthBlock;
      if (qlo == qhi) {
        content = b_.sequence({blocks(qlo, qlo), chars(rlo, rhi)});
      } else {
        // qlo full blocks, then: the rest of a length with qlo blocks; or 1..qhi-qlo-1 more blocks and any shorter
        // rest; or qhi - qlo more blocks and at most rhi characters.
        std::vector<Expr> alts = {chars(rlo, kLengthBlock - 1)};
        if (qhi - qlo >= 2) alts.push_back(b_.sequence({blocks(1, qhi - qlo - 1), chars(0, kLengthBlock - 1)}));
        alts.push_back(b_.sequence({blocks(qhi - qlo, qhi - qlo), chars(0, rhi)}));
        content = b_.sequence({blocks(qlo, qlo), b_.choice(std::move(alts))});
      }
    }
    return b_.sequence({b_.literal("\""), content, b_.literal("\"")});
  }

  // `pattern`, `format` and the lengths each give a regular language of a string's content; together, the string
  // is in all of them (their intersection). Empty: no constraint.
  Result<std::vector<Expr>> string_content_parts(const json& s, GrammarBuilder& b) {
    auto error = [&](const std::string& message) { return make_error(message, StatusCode::kInvalidArgument); };
    std::vector<Expr> parts;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return error("'pattern' must be a string");
      Result<Expr> e = regex_to_expr(s["pattern"].get<std::string>(), RegexMode::kJsonStringSearch, b);
      if (!e.ok()) return error(e.error());
      parts.push_back(*e);
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) return error("'format' must be a string");
      const std::string* regex = format_regex_of(s["format"].get<std::string>());
      if (!regex && kUnsupportedFormats.count(s["format"].get<std::string>()))
        return error(fmt::format("format '{}' is not supported", s["format"].get<std::string>()));
      if (regex) {
        Result<Expr> e = regex_to_expr(*regex, RegexMode::kJsonStringSearch, b);
        if (!e.ok()) return error(e.error());
        parts.push_back(*e);
      }
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      uint32_t bound[2] = {0, kUnbounded};  // minLength, maxLength
      for (const int i : {0, 1}) {
        const char* key = i == 0 ? "minLength" : "maxLength";
        if (!s.contains(key)) continue;
        const json& v = s[key];
        if (!v.is_number() || !is_integral(v) || v.get<double>() < 0)
          return error(fmt::format("'{}' must be a non-negative integer", key));
        if (v.get<double>() > double(kMaxCount))
          return error(fmt::format("'{}' {} is larger than the enforceable limit {} ({} without a pattern or format)",
                                   key, v.get<double>(), kMaxCount, kMaxLongLength));
        bound[i] = uint32_t(v.get<double>());
      }
      parts.push_back(b.repeat(json_string_chars(b, CodePointSet::all()), bound[0], bound[1]));
    }
    // Negations: the content, spelled canonically (as json_string_chars does), minus every spelling the patterns
    // and strings match; a non-canonical spelling of a removed string is never produced.
    std::vector<Expr> removed;
    for (const json& p : s.value(kNotPatterns, json::array())) {
      if (!p.is_string()) return error("'pattern' must be a string");
      Result<Expr> e = regex_to_expr(p.get<std::string>(), RegexMode::kJsonStringSearch, b);
      if (!e.ok()) return error(e.error());
      removed.push_back(*e);
    }
    for (const json& v : s.value(kNotStrings, json::array())) {
      if (!v.is_string()) continue;
      const std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
      removed.push_back(b.literal(std::string_view(text).substr(1, text.size() - 2)));
    }
    if (!removed.empty()) {
      parts.push_back(b.star(json_string_chars(b, CodePointSet::all())));
      const Expr kept = b.intersection(std::move(parts));
      parts = {b.difference(kept, b.choice(std::move(removed)))};
    }
    return parts;
  }

  // A number schema's grammar; as convert_string's, one rule per distinct set of numeric keywords (and type).
  Expr convert_number(const json& s, bool integer, const std::string& path) {
    json keywords = json::object();
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
      if (s.contains(k)) keywords[k] = s[k];
    }
    if (keywords.empty()) return b_.rule_ref(integer ? integer_rule() : number_rule());
    const std::string key = (integer ? "i" : "n") + keywords.dump();
    if (auto it = number_rules_.find(key); it != number_rules_.end()) return b_.rule_ref(it->second);
    const Expr body = number_in_bounds(s, integer, path);
    if (failed()) return body;
    const int32_t rule = b_.add_rule(b_.unique_rule_name(integer ? "integer-constrained" : "number-constrained"));
    b_.set_body(rule, body);
    number_rules_.emplace(key, rule);
    return b_.rule_ref(rule);
  }

  Expr number_in_bounds(const json& s, bool integer, const std::string& path) {
    std::optional<Expr> multiple;
    bool zero_fractions = false;  // a number whose multiples are integers: also spelled with a fraction of zeros
    if (s.contains("multipleOf")) {
      multiple = multiple_of(s["multipleOf"], integer, path);
      if (!multiple) return b_.nothing();
      zero_fractions = !integer && *multiple_integral_;
      if (*multiple_integral_) integer = true;
    }
    for (const char* key : {"minimum", "maximum"}) {
      if (s.contains(key) && !s[key].is_number()) return fail(path, fmt::format("'{}' must be a number", key));
    }
    for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(key) && !s[key].is_number() && !s[key].is_boolean()) {
        return fail(path, fmt::format("'{}' must be a number (or, in draft-04, a boolean)", key));
      }
    }
    const Bounds bounds = bounds_of(s);
    if (!bounds.lo && !bounds.hi && !multiple) return b_.rule_ref(integer ? integer_rule() : number_rule());
    Result<Expr> e =
        integer ? json_integer_in_range(b_, bounds.lo, bounds.hi) : json_number_in_range(b_, bounds.lo, bounds.hi);
    if (!e.ok()) return fail(path, e.error());
    if (!multiple) return *e;
    const Expr integers = b_.intersection({*e, *multiple});
    if (!zero_fractions) return integers;
    // 6000.0 is a number and a multiple of 1: within the number bounds where they are enforceable (+-1e15).
    Result<Expr> numbers = json_number_in_range(b_, bounds.lo, bounds.hi);
    if (!numbers.ok()) return integers;
    const Expr zeros = b_.sequence({*multiple, b_.literal("."), b_.repeat(b_.literal("0"), 1, 16)});
    return b_.choice({integers, b_.intersection({*numbers, zeros})});
  }

  // multipleOf d = k / 10^f (its decimal spelling): the numbers whose text shows they are multiples. f > 0 and
  // k = 1 (0.01): at most f fraction digits, no exponent. f = 0 and k dividing 1000 (1, 2, 4, 5, 25...):
  // integers whose last digits are a multiple of k. Others are refused. Sets multiple_integral_ when the
  // multiples are integers.
  std::optional<Expr> multiple_of(const json& m, bool integer, const std::string& path) {
    if (!m.is_number() || m.get<double>() <= 0) {
      fail(path, "'multipleOf' must be a number above 0");
      return std::nullopt;
    }
    const std::string text = m.dump();
    if (text.find_first_of("eE") != std::string::npos) {
      fail(path, fmt::format("'multipleOf' {} is not supported (only plain decimals are)", text));
      return std::nullopt;
    }
    const size_t dot = text.find('.');
    std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    std::string digits = text.substr(0, dot) + fraction;
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
    const size_t f = fraction.size();
    const uint64_t k = digits.empty() || digits.size() > 6 ? 0 : std::stoull(digits);
    const Expr digit = b_.byte_range('0', '9');
    const Expr sign = b_.optional(b_.literal("-"));
    const Expr natural = b_.choice({b_.literal("0"), b_.sequence({b_.byte_range('1', '9'), b_.star(digit)})});
    if (k == 1 && f > 0 && !integer) {
      multiple_integral_ = false;
      return b_.sequence(
          {sign, natural,
           b_.optional(b_.sequence({b_.literal("."), b_.repeat(digit, 1, uint32_t(std::min<size_t>(f, 16)))}))});
    }
    // An integer multiple; with f > 0 only when k = 1 and the schema is an integer (every integer is a multiple).
    uint64_t power = 1;
    size_t width = 0;
    while (k > 0 && width <= 3 && power % k != 0) {
      power *= 10;
      ++width;
    }
    if (k == 0 || (f > 0 && k != 1) || width > 3) {
      fail(path, fmt::format("'multipleOf' {} is not supported (only 10^-n, or divisors of 1000)", text));
      return std::nullopt;
    }
    multiple_integral_ = true;
    if (f > 0 || k == 1) return b_.sequence({sign, natural});
    // Below 10^width: the multiples themselves; from there: any leading digits, then a multiple's width digits.
    std::vector<Expr> small, suffixes;
    for (uint64_t n = 0; n < power; n += k) {
      small.push_back(b_.literal(std::to_string(n)));
      suffixes.push_back(b_.literal(fmt::format("{:0{}}", n, width)));
    }
    const Expr big = b_.sequence({b_.byte_range('1', '9'), b_.star(digit), b_.choice(std::move(suffixes))});
    return b_.sequence({sign, b_.choice({b_.choice(std::move(small)), big})});
  }

  const json& root_;
  JsonGrammarOptions o_;
  JsonSchemaDialect dialect_;
  GrammarBuilder b_;
  std::optional<std::string> error_;
  std::map<std::string, int32_t> refs_;
  std::unordered_map<const json*, std::unordered_map<std::string_view, const json*>> member_index_;
  std::vector<std::pair<int32_t, std::string>> pending_;
  uint64_t complement_steps_ = 0;
  uint64_t any_order_states_ = 0;  // any_order_members' estimated automaton states so far
  JsonSchemaNotes notes_;
  std::optional<bool> multiple_integral_;  // multiple_of's last answer
  int32_t length_block_rule_ = -1;
  std::unordered_map<std::string, int32_t> string_rules_;  // convert_string's rules by their keywords' text
  std::unordered_map<std::string, int32_t> number_rules_;  // convert_number's, by type and keywords
  struct SharedSchema {
    Expr expr;
    int32_t rule;  // -1 until the schema is met a second time (and is worth a rule)
  };
  std::unordered_map<std::string, SharedSchema> converted_;  // convert_schema's, by normalized_text
  uint64_t schema_key_bytes_ = 0;                            // normalized text written so far
  int32_t string_rule_ = -1, number_rule_ = -1, integer_rule_ = -1, value_rule_ = -1, object_rule_ = -1,
          array_rule_ = -1;
};

}  // namespace

Result<Grammar> json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& options,
                                       const BuildLimits& limits, JsonSchemaNotes* notes) {
  const JsonSchemaDialect dialect = dialect_of(schema, options.dialect);
  auto convert = [&](const json& root) {
    SchemaConverter converter(root, options, dialect);
    Result<Grammar> g = converter.convert(limits);
    if (notes) *notes = converter.notes();
    return g;
  };
  if (!ref_overrides_siblings(dialect)) return convert(schema);
  json document = schema;
  drop_ref_siblings(document);
  return convert(document);
}

Result<Grammar> json_schema_to_grammar(std::string_view schema_text, const JsonGrammarOptions& options,
                                       const BuildLimits& limits, JsonSchemaNotes* notes) {
  Result<json> schema = parse_ordered_json(schema_text);
  if (!schema.ok()) return make_error("schema: not valid JSON (" + schema.error() + ")", StatusCode::kInvalidArgument);
  return json_schema_to_grammar(*schema, options, limits, notes);
}

Result<Grammar> json_object_grammar(const JsonGrammarOptions& options) {
  const json empty = json::object();
  return SchemaConverter(empty, options, options.dialect).any_object();
}

std::optional<JsonSchemaDialect> parse_json_schema_dialect(std::string_view name) {
  for (const JsonSchemaDialect d : {JsonSchemaDialect::kUnspecified, JsonSchemaDialect::kDraft4,
                                    JsonSchemaDialect::kDraft6, JsonSchemaDialect::kDraft7,
                                    JsonSchemaDialect::kDraft2019_09, JsonSchemaDialect::kDraft2020_12})
    if (json_schema_dialect_name(d) == name) return d;
  return std::nullopt;
}

std::string_view json_schema_dialect_name(JsonSchemaDialect dialect) {
  switch (dialect) {
    case JsonSchemaDialect::kUnspecified: return "unspecified";
    case JsonSchemaDialect::kDraft4: return "draft4";
    case JsonSchemaDialect::kDraft6: return "draft6";
    case JsonSchemaDialect::kDraft7: return "draft7";
    case JsonSchemaDialect::kDraft2019_09: return "draft2019-09";
    case JsonSchemaDialect::kDraft2020_12: return "draft2020-12";
  }
  return "?";
}

}  // namespace pagoda::grammar
