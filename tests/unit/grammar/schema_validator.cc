// validate (schema_validator.h).
#include "schema_validator.h"

#include <arpa/inet.h>

#include <cmath>
#include <regex>
#include <set>
#include <vector>

#include "grammar/code_point_set.h"

namespace pagoda::grammar::testing {
namespace {

using json = nlohmann::ordered_json;

std::wstring wide(const std::string& s) {
  std::wstring out;
  size_t pos = 0;
  uint32_t cp = 0;
  while (pos < s.size() && decode_utf8(s, pos, cp)) out += wchar_t(cp);
  return out;
}

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool valid_date(const std::string& s) {
  static const std::regex re("^(\\d{4})-(\\d{2})-(\\d{2})$");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1) return false;
  return d <= days[mo - 1] + (mo == 2 && is_leap(y) ? 1 : 0);
}

bool valid_time(const std::string& s) {
  static const std::regex re("^(\\d{2}):(\\d{2}):(\\d{2})(\\.\\d+)?([Zz]|[+-](\\d{2}):(\\d{2}))$");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  if (std::stoi(m[1]) > 23 || std::stoi(m[2]) > 59 || std::stoi(m[3]) > 59) return false;
  if (m[6].matched && (std::stoi(m[6]) > 23 || std::stoi(m[7]) > 59)) return false;
  return true;
}

bool valid_ipv4(const std::string& s) {
  std::smatch m;
  bool ok = std::regex_match(s, m, std::regex("^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})$"));
  for (int i = 1; ok && i <= 4; ++i) ok = std::stoi(m[i]) <= 255 && (m[i].length() == 1 || m[i].str()[0] != '0');
  return ok;
}

// RFC 5321: a dot-atom or a quoted local part; a domain of dotted labels, or an address literal ([IPv4] or
// [IPv6:...], the latter read by inet_pton).
bool valid_email(const std::string& s) {
  size_t at = 0;
  if (!s.empty() && s[0] == '"') {
    size_t i = 1;
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\') ++i;
      if (i >= s.size() || s[i] < ' ' || s[i] > '~') return false;
    }
    if (i + 1 >= s.size() || s[i + 1] != '@') return false;
    at = i + 1;
  } else {
    at = s.find('@');
    if (at == std::string::npos || at == 0 || s[0] == '.' || s[at - 1] == '.') return false;
    const std::string local = s.substr(0, at);
    if (local.find("..") != std::string::npos || local.find_first_of(" \"(),:;<>@[\\]") != std::string::npos)
      return false;
  }
  const std::string domain = s.substr(at + 1);
  if (domain.size() > 2 && domain.front() == '[' && domain.back() == ']') {
    const std::string literal = domain.substr(1, domain.size() - 2);
    if (literal.rfind("IPv6:", 0) == 0) {
      in6_addr a;
      return inet_pton(AF_INET6, literal.substr(5).c_str(), &a) == 1;
    }
    return valid_ipv4(literal);
  }
  return std::regex_match(domain, std::regex("^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\\.)+"
                                             "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$"));
}

std::string check_format(const std::string& format, const std::string& s) {
  bool ok = false;
  if (format == "date") {
    ok = valid_date(s);
  } else if (format == "time") {
    ok = valid_time(s);
  } else if (format == "date-time") {
    const size_t t = s.find_first_of("Tt");
    ok = t != std::string::npos && valid_date(s.substr(0, t)) && valid_time(s.substr(t + 1));
  } else if (format == "uuid") {
    ok = std::regex_match(s, std::regex("^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$"));
  } else if (format == "email") {
    ok = valid_email(s);
  } else if (format == "uri") {
    // The scheme, then characters RFC 3986 allows anywhere and well-formed percent escapes.
    ok = std::regex_match(s, std::regex("^[A-Za-z][A-Za-z0-9+.-]*:([A-Za-z0-9._~!$&'()*+,;=:@/?#\\[\\]-]|%[0-9A-Fa-f]{2})*$"));
  } else if (format == "ipv4") {
    ok = valid_ipv4(s);
  } else if (format == "hostname") {
    ok = s.size() <= 253 && std::regex_match(s, std::regex("^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                                                           "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"));
  } else {
    return "unknown format " + format;
  }
  return ok ? "" : "not a valid " + format + ": " + s;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  std::string check(const json& s, const json& x, int depth = 0) {
    if (depth > 200) return "too deep";
    if (s.is_boolean()) return s.get<bool>() ? "" : "false schema";
    if (s.contains("$ref")) {
      const std::string ref = s["$ref"].get<std::string>();
      const json& target = ref == "#" ? root_ : root_.at(json::json_pointer(ref.substr(1)));
      if (std::string e = check(target, x, depth + 1); !e.empty()) return e;
    }
    if (s.contains("type")) {
      std::vector<std::string> types;
      if (s["type"].is_string())
        types.push_back(s["type"]);
      else
        for (const json& t : s["type"]) types.push_back(t);
      bool ok = false;
      for (const std::string& t : types) ok = ok || has_type(x, t);
      if (!ok) return "wrong type: " + x.dump();
    }
    if (s.contains("const") && s["const"] != x) return "not the const: " + x.dump();
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), x) == s["enum"].end())
      return "not in enum: " + x.dump();
    if (s.contains("allOf")) {
      for (const json& sub : s["allOf"]) {
        if (std::string e = check(sub, x, depth + 1); !e.empty()) return "allOf: " + e;
      }
    }
    if (s.contains("anyOf")) {
      bool ok = false;
      for (const json& sub : s["anyOf"]) ok = ok || check(sub, x, depth + 1).empty();
      if (!ok) return "no anyOf branch matches " + x.dump();
    }
    if (s.contains("not") && check(s["not"], x, depth + 1).empty()) return "matches the 'not' schema: " + x.dump();
    if (s.contains("if")) {
      const bool holds = check(s["if"], x, depth + 1).empty();
      const char* branch = holds ? "then" : "else";
      if (s.contains(branch)) {
        if (std::string e = check(s[branch], x, depth + 1); !e.empty()) return std::string(branch) + ": " + e;
      }
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const json& sub : s["oneOf"]) n += check(sub, x, depth + 1).empty();
      if (n != 1) return std::to_string(n) + " oneOf branches match " + x.dump();
    }
    if (x.is_number()) {
      const double v = x.get<double>();
      const bool d4min =
          s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() && s["exclusiveMinimum"].get<bool>();
      const bool d4max =
          s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() && s["exclusiveMaximum"].get<bool>();
      if (s.contains("minimum") && (d4min ? v <= s["minimum"].get<double>() : v < s["minimum"].get<double>()))
        return "below minimum: " + x.dump();
      if (s.contains("maximum") && (d4max ? v >= s["maximum"].get<double>() : v > s["maximum"].get<double>()))
        return "above maximum: " + x.dump();
      if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number() &&
          v <= s["exclusiveMinimum"].get<double>())
        return "not above exclusiveMinimum: " + x.dump();
      if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number() &&
          v >= s["exclusiveMaximum"].get<double>())
        return "not below exclusiveMaximum: " + x.dump();
    }
    if (x.is_string()) {
      const std::wstring w = wide(x.get<std::string>());
      if (s.contains("minLength") && w.size() < s["minLength"].get<size_t>()) return "too short: " + x.dump();
      if (s.contains("maxLength") && w.size() > s["maxLength"].get<size_t>()) return "too long: " + x.dump();
      if (s.contains("pattern")) {
        const std::string p = s["pattern"];
        if (!std::regex_search(w, std::wregex(wide(p), std::regex::ECMAScript)))
          return "pattern " + p + " fails on " + x.dump();
      }
      if (s.contains("format")) {
        if (std::string e = check_format(s["format"], x.get<std::string>()); !e.empty()) return e;
      }
    }
    if (x.is_array()) {
      if (s.contains("minItems") && x.size() < s["minItems"].get<size_t>()) return "too few items: " + x.dump();
      if (s.contains("maxItems") && x.size() > s["maxItems"].get<size_t>()) return "too many items: " + x.dump();
      size_t num_prefix = 0;
      const json* prefix = s.contains("prefixItems")                        ? &s["prefixItems"]
                           : (s.contains("items") && s["items"].is_array()) ? &s["items"]
                                                                            : nullptr;
      if (prefix) {
        num_prefix = prefix->size();
        for (size_t i = 0; i < x.size() && i < num_prefix; ++i) {
          if (std::string e = check((*prefix)[i], x[i], depth + 1); !e.empty())
            return "item " + std::to_string(i) + ": " + e;
        }
      }
      const json* rest = s.contains("prefixItems") ? (s.contains("items") ? &s["items"] : nullptr)
                         : prefix                  ? (s.contains("additionalItems") ? &s["additionalItems"] : nullptr)
                                                   : (s.contains("items") ? &s["items"] : nullptr);
      for (size_t i = num_prefix; rest && i < x.size(); ++i) {
        if (std::string e = check(*rest, x[i], depth + 1); !e.empty()) return "item " + std::to_string(i) + ": " + e;
      }
      if (s.value("uniqueItems", false)) {
        for (size_t i = 0; i < x.size(); ++i)
          for (size_t j = i + 1; j < x.size(); ++j)
            if (x[i] == x[j]) return "items " + std::to_string(i) + " and " + std::to_string(j) + " are equal";
      }
      if (s.contains("contains")) {
        size_t found = 0;
        for (const json& item : x) found += check(s["contains"], item, depth + 1).empty();
        if (found < s.value("minContains", size_t(1))) return "too few items match 'contains': " + x.dump();
        if (s.contains("maxContains") && found > s["maxContains"].get<size_t>())
          return "too many items match 'contains': " + x.dump();
      }
    }
    if (x.is_object()) {
      if (s.contains("required")) {
        for (const json& r : s["required"]) {
          if (!x.contains(r.get<std::string>())) return "missing required " + r.dump();
        }
      }
      const json props = s.value("properties", json::object());
      const json patterns = s.value("patternProperties", json::object());
      if (s.contains("minProperties") && x.size() < s["minProperties"].get<size_t>()) return "too few properties";
      if (s.contains("maxProperties") && x.size() > s["maxProperties"].get<size_t>()) return "too many properties";
      for (const char* key : {"dependentRequired", "dependentSchemas", "dependencies"}) {
        const json dependencies = s.value(key, json::object());
        for (auto d = dependencies.begin(); d != dependencies.end(); ++d) {
          if (!x.contains(d.key())) continue;
          if (d.value().is_array()) {
            for (const json& r : d.value())
              if (!x.contains(r.get<std::string>())) return d.key() + " needs " + r.dump();
          } else if (std::string e = check(d.value(), x, depth + 1); !e.empty()) {
            return "dependent schema of " + d.key() + ": " + e;
          }
        }
      }
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (s.contains("propertyNames")) {
          if (std::string e = check(s["propertyNames"], json(it.key()), depth + 1); !e.empty())
            return "property name " + it.key() + ": " + e;
        }
        bool matched = false;
        for (auto p = patterns.begin(); p != patterns.end(); ++p) {
          if (!std::regex_search(wide(it.key()), std::wregex(wide(p.key()), std::regex::ECMAScript))) continue;
          matched = true;
          if (std::string e = check(p.value(), it.value(), depth + 1); !e.empty())
            return "pattern property " + it.key() + ": " + e;
        }
        if (props.contains(it.key())) {
          if (std::string e = check(props[it.key()], it.value(), depth + 1); !e.empty())
            return "property " + it.key() + ": " + e;
        } else if (!matched && s.contains("additionalProperties")) {
          if (std::string e = check(s["additionalProperties"], it.value(), depth + 1); !e.empty())
            return "additional property " + it.key() + ": " + e;
        }
      }
    }
    return "";
  }

 private:
  static bool has_type(const json& x, const std::string& t) {
    if (t == "object") return x.is_object();
    if (t == "array") return x.is_array();
    if (t == "string") return x.is_string();
    if (t == "integer")
      return x.is_number_integer() || (x.is_number_float() && std::floor(x.get<double>()) == x.get<double>());
    if (t == "number") return x.is_number();
    if (t == "boolean") return x.is_boolean();
    if (t == "null") return x.is_null();
    return false;
  }
  const json& root_;
};

}  // namespace

std::string validate(const json& schema, const json& instance) { return Validator(schema).check(schema, instance); }

std::string duplicate_listed_key(const std::string& text, const std::set<std::string>& listed) {
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    if (event == json::parse_event_t::key && !open.empty() && listed.count(parsed.get<std::string>()) &&
        !open.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  (void)json::parse(text, cb, false);
  return duplicate;
}

std::set<std::string> listed_property_names(const json& schema) {
  std::set<std::string> names;
  if (schema.is_object()) {
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (it.key() == "properties" && it.value().is_object())
        for (auto p = it.value().begin(); p != it.value().end(); ++p) names.insert(p.key());
      for (const std::string& n : listed_property_names(it.value())) names.insert(n);
    }
  } else if (schema.is_array()) {
    for (const json& x : schema)
      for (const std::string& n : listed_property_names(x)) names.insert(n);
  }
  return names;
}

}  // namespace pagoda::grammar::testing
