// json_schema_to_grammar / json_object_grammar (json_schema_converter.h). One SchemaConverter per schema: each
// schema node becomes an expression inlined into its parent's rule, except $ref targets (one rule each, which is
// what makes recursion possible) and the shared free-form pieces (string, number, integer, any value).
#include "grammar/json_schema_converter.h"

#include <fmt/format.h>

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

const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description",      "default",         "examples",      "$comment",    "$schema",       "$id",
    "id",       "$anchor",          "deprecated",      "readOnly",      "writeOnly",   "$defs",         "definitions",
    "nullable", "contentMediaType", "contentEncoding", "contentSchema", "$vocabulary", "discriminator", "strict"};
const std::set<std::string, std::less<>> kUnsupported = {"not",
                                                         "if",
                                                         "then",
                                                         "else",
                                                         "dependentRequired",
                                                         "dependentSchemas",
                                                         "dependencies",
                                                         "patternProperties",
                                                         "propertyNames",
                                                         "unevaluatedProperties",
                                                         "unevaluatedItems",
                                                         "contains",
                                                         "minContains",
                                                         "maxContains",
                                                         "$dynamicRef",
                                                         "$recursiveRef",
                                                         "$dynamicAnchor",
                                                         "$recursiveAnchor"};
const std::set<std::string, std::less<>> kObjectKeywords = {"properties", "required", "additionalProperties",
                                                            "minProperties", "maxProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items",    "prefixItems", "additionalItems",
                                                           "minItems", "maxItems",    "uniqueItems"};
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                                            "exclusiveMaximum", "multipleOf"};
const std::vector<std::string> kAllTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};

// Anchored regexes for the supported formats (written for JSON string content; all ASCII, nothing to escape).
const std::map<std::string, std::string, std::less<>> kFormats = {
    {"date",
     "^([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8])"
     ")"
     "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)$"},
    {"time", "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"},
    {"date-time",
     "^([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8])"
     ")"
     "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)"
     "T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"},
    {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
    {"email",
     "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
     "([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"},
    {"uri",
     "^[A-Za-z][A-Za-z0-9+.-]*://"
     "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
     "(:[0-9]{1,5})?(/([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*"
     "(\\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?(#([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"},
    {"ipv4", "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"},
    {"hostname", "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?){0,2}$"},
};

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

struct Bounds {
  std::optional<NumberBound> lo, hi;
};

class SchemaConverter {
 public:
  SchemaConverter(const json& root, const JsonGrammarOptions& options) : root_(root), o_(options) {}

  Result<Grammar> convert(const BuildLimits& limits) {
    const int32_t root = b_.add_rule("root");
    refs_["#"] = root;
    b_.set_body(root, convert_schema(root_, "#", 0));
    for (size_t converted = 0; !failed() && !pending_.empty(); ++converted) {
      if (converted % 256 == 0 && limits.should_stop && limits.should_stop())
        return make_error("the grammar's compile was stopped", StatusCode::kCancelled);
      const auto [rule, pointer] = pending_.back();
      pending_.pop_back();
      const json* target = resolve(pointer, pointer);
      b_.set_body(rule, target ? convert_schema(*target, pointer, 0) : b_.nothing());
    }
    if (failed()) return make_error(*error_, StatusCode::kInvalidArgument);
    Result<Grammar> g = b_.build(root, limits);
    if (!g.ok()) return make_error("schema: " + g.error(), g.status().code());
    return g;
  }

  Result<Grammar> any_object() {
    const int32_t root = b_.add_rule("root");
    b_.set_body(root, b_.rule_ref(object_any_rule()));
    Result<Grammar> g = b_.build(root);
    if (!g.ok()) return make_error("json_object: " + g.error(), StatusCode::kInvalidArgument);
    return g;
  }

 private:
  bool failed() const { return error_.has_value(); }
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
                                  b_.sequence({b_.byte_range('1', '9'), b_.repeat(digit, 0, kMaxFreeDigits - 1)})})});
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
    return shared_rule(integer_rule_, "integer",
                       [&] { return *json_integer_in_range(b_, std::nullopt, std::nullopt); });
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
        } else if (k == "items" && v.is_object()) {
          json& slot = merged["items"];
          slot = slot.is_null() ? v : json{{"allOf", json::array({slot, v})}};
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
        } else if (k == "anyOf" || k == "oneOf") {
          if (merged.contains("anyOf") || merged.contains("oneOf")) {
            return fail(path, "allOf members with more than one anyOf/oneOf are not supported"), json(false);
          }
          merged[k] = v;
        } else if (k == "uniqueItems") {
          merged[k] = merged.value(k, false) || (v.is_boolean() && v.get<bool>());
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

  Expr convert_schema(const json& s, const std::string& path, int32_t depth) {
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
    if (s.contains("allOf") || s.contains("$ref")) {
      std::vector<json> members;
      if (!collect_members(s, path, depth, members)) return b_.nothing();
      const json merged = merge(members, path);
      if (failed()) return b_.nothing();
      return convert_schema(merged, path, depth + 1);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return convert_alternatives(s, path, depth);
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() == "propertyNames" && every_string_matches(it.value())) continue;
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
    if (types.empty()) {  // inferred from the keywords present; none: any value
      for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        const char* t = kObjectKeywords.count(k)   ? "object"
                        : kArrayKeywords.count(k)  ? "array"
                        : kStringKeywords.count(k) ? "string"
                        : kNumberKeywords.count(k) ? "number"
                                                   : nullptr;
        if (t && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
      }
      if (types.empty()) return b_.rule_ref(value_rule());
    }
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<Expr> alts;
    for (const std::string& t : types) {
      if (t == "integer" && has_number) continue;  // number covers it
      alts.push_back(convert_typed(s, t, path, depth));
    }
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
    if (one_of) check_disjoint(branches, path, depth);
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
  void check_disjoint(const std::vector<json>& branches, const std::string& path, int32_t depth) {
    std::vector<BranchShape> shapes;
    for (size_t i = 0; i < branches.size(); ++i)
      shapes.push_back(shape_of(branches[i], fmt::format("{}/oneOf/{}", path, i), depth));
    if (failed()) return;
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
        if (!disjoint) {
          fail(path, fmt::format("oneOf branches {} and {} may both match one value; only oneOf with disjoint branches "
                                 "(distinct types, or a required property with distinct const/enum values) is "
                                 "supported, or use anyOf",
                                 i, j));
          return;
        }
      }
    }
  }

  Expr convert_enum(const json& s, const std::string& path) {
    json values = s.contains("const") ? json::array({s["const"]}) : s["enum"];
    if (!values.is_array()) return fail(path, "'enum' must be an array");
    if (s.contains("const") && s.contains("enum")) {
      if (std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) values = json::array();
    }
    // Siblings restrict the listed values; those checked here: type, numeric bounds, lengths and counts.
    static const std::set<std::string, std::less<>> kChecked = {
        "enum",      "const",     "type",     "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "minItems", "maxItems"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!kChecked.count(it.key()) && !kAnnotations.count(it.key())) {
        return fail(path, fmt::format("'enum'/'const' together with '{}' is not supported", it.key()));
      }
    }
    const std::vector<std::string> types = types_of(s);
    const Bounds bounds = bounds_of(s);
    std::vector<Expr> alts;
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
      }
      if (v.is_array()) {
        if (s.contains("minItems") && s["minItems"].is_number() && double(v.size()) < s["minItems"].get<double>())
          continue;
        if (s.contains("maxItems") && s["maxItems"].is_number() && double(v.size()) > s["maxItems"].get<double>())
          continue;
      }
      alts.push_back(b_.literal(v.dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    return b_.choice(std::move(alts));
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
    struct Member {
      std::string key;
      Expr value;
      bool required;
    };
    std::vector<Member> members;
    for (auto it = props.begin(); it != props.end(); ++it) {
      const bool req = std::find(required.begin(), required.end(), it.key()) != required.end();
      members.push_back(
          {it.key(),
           convert_schema(it.value(), fmt::format("{}/properties/{}", path, json_pointer_escape(it.key())), depth + 1),
           req});
    }
    // A required property not in `properties` takes the additionalProperties schema (any value when that is
    // absent: only an explicit false forbids it).
    const bool closed = s.contains("additionalProperties") && !additional;
    for (const std::string& r : required) {
      if (props.contains(r)) continue;
      if (closed) {
        return fail(
            path, fmt::format("required property '{}' is not in 'properties' and 'additionalProperties' is false", r));
      }
      members.push_back({r,
                         additional ? convert_schema(*additional, path + "/additionalProperties", depth + 1)
                                    : b_.rule_ref(value_rule()),
                         true});
    }
    if (failed()) return b_.nothing();
    const size_t num_required =
        size_t(std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; }));
    if (s.contains("minProperties")) {
      const std::optional<uint64_t> min = count_keyword(s, "minProperties", path);
      if (!min) return b_.nothing();
      if (*min > num_required)
        return fail(path, "'minProperties' above the number of required properties is not supported");
    }
    if (s.contains("maxProperties")) {
      const std::optional<uint64_t> max = count_keyword(s, "maxProperties", path);
      if (!max) return b_.nothing();
      if (additional || *max < members.size()) {
        return fail(path, "'maxProperties' below the number of properties that may appear is not supported");
      }
    }

    std::vector<Expr> kv;
    for (const Member& m : members) kv.push_back(b_.sequence({b_.literal(json(m.key).dump()), colon(), m.value}));
    std::optional<Expr> extra;
    if (additional) {
      std::vector<std::string> keys;
      for (const Member& m : members) keys.push_back(m.key);
      extra = b_.sequence({b_.literal("\""), not_keys(keys), b_.literal("\""), colon(),
                           convert_schema(*additional, path + "/additionalProperties", depth + 1)});
    }
    // tail[i]: members i.. after at least one member was written (each behind a comma).
    const size_t n = members.size();
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
    return container("{", b_.choice(std::move(firsts)), num_required == 0, "}");
  }

  // Canonical JSON string content whose decoded value is none of `keys`.
  Expr not_keys(const std::vector<std::string>& keys) {
    struct Node {
      std::map<uint32_t, size_t> children;
      bool terminal = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& k : keys) {
      size_t node = 0, pos = 0;
      uint32_t cp;
      while (pos < k.size() && decode_utf8(k, pos, cp)) {
        auto it = trie[node].children.find(cp);
        if (it == trie[node].children.end()) {
          trie.push_back({});
          it = trie[node].children.emplace(cp, trie.size() - 1).first;
        }
        node = it->second;
      }
      trie[node].terminal = true;
    }
    const Expr any_tail = b_.star(json_string_chars(b_, CodePointSet::all()));
    std::function<Expr(size_t, int32_t)> build = [&](size_t node, int32_t level) -> Expr {
      if (level > 1000) return fail("#", "a property name longer than 1000 characters");
      CodePointSet others = CodePointSet::all();
      std::vector<Expr> alts;
      if (!trie[node].terminal) alts.push_back(b_.empty());
      for (const auto& [cp, child] : trie[node].children) {
        others.remove(cp, cp);
        alts.push_back(b_.sequence({json_string_chars(b_, CodePointSet::single(cp)), build(child, level + 1)}));
      }
      alts.push_back(b_.sequence({json_string_chars(b_, others), any_tail}));
      return b_.choice(std::move(alts));
    };
    return build(0, 0);
  }

  Expr convert_array(const json& s, const std::string& path, int32_t depth) {
    std::vector<Expr> prefix;
    std::optional<json> rest;  // the schema of items after the prefix; nullopt: none allowed
    const json* prefix_list = nullptr;
    const char* prefix_key = nullptr;
    if (s.contains("prefixItems")) {
      prefix_list = &s["prefixItems"];
      prefix_key = "prefixItems";
      if (s.contains("items")) rest = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix_list = &s["items"];
      prefix_key = "items";
      if (s.contains("additionalItems")) rest = s["additionalItems"];
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
    if (s.contains("uniqueItems") && s["uniqueItems"].is_boolean() && s["uniqueItems"].get<bool>() &&
        (!max || *max > 1)) {
      return fail(path, "'uniqueItems' is not supported (unless maxItems <= 1)");
    }
    const Expr rest_item =
        rest ? convert_schema(*rest, path + (prefix_list ? "/additionalItems" : "/items"), depth + 1) : b_.nothing();
    if (failed()) return b_.nothing();
    const uint64_t k = prefix.size();
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

  Expr convert_string(const json& s, const std::string& path) {
    // `pattern`, `format` and the lengths each give a regular language of the string's content; together, the
    // string is in all of them (their intersection).
    std::vector<Expr> parts;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return fail(path, "'pattern' must be a string");
      Result<Expr> e = regex_to_expr(s["pattern"].get<std::string>(), RegexMode::kJsonStringSearch, b_);
      if (!e.ok()) return fail(path, e.error());
      parts.push_back(*e);
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) return fail(path, "'format' must be a string");
      auto it = kFormats.find(s["format"].get<std::string>());
      if (it == kFormats.end())
        return fail(path, fmt::format("format '{}' is not supported", s["format"].get<std::string>()));
      Result<Expr> e = regex_to_expr(it->second, RegexMode::kJsonStringSearch, b_);
      if (!e.ok()) return fail(path, e.error());
      parts.push_back(*e);
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      uint64_t min = 0;
      uint32_t max = kUnbounded;
      if (s.contains("minLength")) {
        const std::optional<uint64_t> v = count_keyword(s, "minLength", path);
        if (!v) return b_.nothing();
        min = *v;
      }
      if (s.contains("maxLength")) {
        const std::optional<uint64_t> v = count_keyword(s, "maxLength", path);
        if (!v) return b_.nothing();
        max = uint32_t(*v);
      }
      parts.push_back(b_.repeat(json_string_chars(b_, CodePointSet::all()), uint32_t(min), max));
    }
    if (parts.empty()) return b_.rule_ref(string_rule());
    return b_.sequence({b_.literal("\""), b_.intersection(std::move(parts)), b_.literal("\"")});
  }

  Expr convert_number(const json& s, bool integer, const std::string& path) {
    if (s.contains("multipleOf")) {
      const json& m = s["multipleOf"];
      if (!(integer && m.is_number() && m.get<double>() == 1.0)) return fail(path, "'multipleOf' is not supported");
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
    if (!bounds.lo && !bounds.hi) return b_.rule_ref(integer ? integer_rule() : number_rule());
    Result<Expr> e =
        integer ? json_integer_in_range(b_, bounds.lo, bounds.hi) : json_number_in_range(b_, bounds.lo, bounds.hi);
    if (!e.ok()) return fail(path, e.error());
    return *e;
  }

  const json& root_;
  JsonGrammarOptions o_;
  GrammarBuilder b_;
  std::optional<std::string> error_;
  std::map<std::string, int32_t> refs_;
  std::unordered_map<const json*, std::unordered_map<std::string_view, const json*>> member_index_;
  std::vector<std::pair<int32_t, std::string>> pending_;
  int32_t string_rule_ = -1, number_rule_ = -1, integer_rule_ = -1, value_rule_ = -1, object_rule_ = -1,
          array_rule_ = -1;
};

}  // namespace

Result<Grammar> json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& options,
                                       const BuildLimits& limits) {
  return SchemaConverter(schema, options).convert(limits);
}

Result<Grammar> json_schema_to_grammar(std::string_view schema_text, const JsonGrammarOptions& options,
                                       const BuildLimits& limits) {
  Result<json> schema = parse_ordered_json(schema_text);
  if (!schema.ok()) return make_error("schema: not valid JSON (" + schema.error() + ")", StatusCode::kInvalidArgument);
  return json_schema_to_grammar(*schema, options, limits);
}

Result<Grammar> json_object_grammar(const JsonGrammarOptions& options) {
  const json empty = json::object();
  return SchemaConverter(empty, options).any_object();
}

}  // namespace pagoda::grammar
