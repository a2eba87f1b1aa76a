// Jinja values: truthiness and the Python str()/repr()/json.dumps() spellings.
#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace pagoda::jinja {

std::string int_dict_key(int64_t key) { return std::string(kIntKeyMark) + std::to_string(key); }

Json dict_key_value(const std::string& key) {
  if (!key.starts_with(kIntKeyMark)) return Json(key);
  return Json(std::stoll(key.substr(kIntKeyMark.size())));
}

std::string dict_key_text(const std::string& key) {
  return key.starts_with(kIntKeyMark) ? key.substr(kIntKeyMark.size()) : key;
}

std::string type_name(const Value& v) {
  if (v.is_undefined()) return "undefined";
  if (!v.is_data()) return "function";
  switch (v.data.type()) {
    case Json::value_t::null: return "none";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "str";
    case Json::value_t::array: return "list";
    case Json::value_t::object: return "dict";
    default: return "binary";
  }
}

bool truthy(const Value& v) {
  if (v.is_undefined()) return false;
  if (!v.is_data()) return true;
  const Json& j = v.data;
  switch (j.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return j.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return j.get<int64_t>() != 0;
    case Json::value_t::number_float: return j.get<double>() != 0.0;
    case Json::value_t::string: return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !j.empty();
    default: return true;
  }
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Python's repr() of a string: single quotes unless the text has one and no double quote.
std::string python_string_repr(const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::string python_repr(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float: return python_float(j.get<double>());
    case Json::value_t::string: return python_string_repr(j.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + python_repr(j[i]);
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : j.items()) {
        out += (first ? "" : ", ") + python_repr(dict_key_value(key)) + ": " + python_repr(value);
        first = false;
      }
      return out + "}";
    }
    default: return "<binary>";
  }
}

// Python's str(): what {{ value }} prints.
std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (!v.is_data()) return "<function " + (v.macro ? v.macro->targets[0] : v.function) + ">";
  if (v.data.is_string()) return v.data.get<std::string>();
  return python_repr(v.data);
}

static void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Python's json.dumps(value, ensure_ascii=False, indent=indent), which transformers' tojson filter calls: key
// order kept, ", " and ": " separators without indent, "," and newlines with it.
bool append_json(std::string& out, const Json& j, int32_t indent, int32_t level, size_t max_bytes) {
  auto newline = [&](int32_t at_level) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(at_level), ' ');
  };
  switch (j.type()) {
    case Json::value_t::null: out += "null"; break;
    case Json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; break;
    case Json::value_t::number_float: {
      double d = j.get<double>();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float(d);
      break;
    }
    case Json::value_t::string: append_json_string(out, j.get_ref<const std::string&>()); break;
    case Json::value_t::array: {
      if (j.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(level + 1);
        if (!append_json(out, j[i], indent, level + 1, max_bytes)) return false;
      }
      newline(level);
      out += ']';
      break;
    }
    case Json::value_t::object: {
      if (j.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, value] : j.items()) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(level + 1);
        append_json_string(out, dict_key_text(key));
        out += ": ";
        if (!append_json(out, value, indent, level + 1, max_bytes)) return false;
      }
      newline(level);
      out += '}';
      break;
    }
    default: out += j.dump(-1, ' ', false, Json::error_handler_t::replace); break;
  }
  return out.size() <= max_bytes;
}

// The UTF-8 characters of `s`, each as its byte range: Python indexes strings by character.
std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> chars;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    len = std::min(len, s.size() - i);
    chars.push_back(s.substr(i, len));
    i += len;
  }
  return chars;
}

std::string python_strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::string_view set = " \t\n\r\f\v";
  if (chars && chars->is_data() && chars->data.is_string()) set = chars->data.get_ref<const std::string&>();
  bool strip[256] = {};  // a table, not set.find per byte: both strings may be megabytes long
  for (char c : set) strip[static_cast<unsigned char>(c)] = true;
  size_t begin = 0, end = s.size();
  if (left)
    while (begin < end && strip[static_cast<unsigned char>(s[begin])]) ++begin;
  if (right)
    while (end > begin && strip[static_cast<unsigned char>(s[end - 1])]) --end;
  return s.substr(begin, end - begin);
}

}  // namespace pagoda::jinja
