// Jinja values and their Python faces: a template value is context data (JSON), undefined, or a callable; str(),
// repr() and json.dumps() are written out as Python prints them, since chat templates are checked against
// transformers' output byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_syntax.h"

namespace pagoda::jinja {

// A template value: context data (JSON), Jinja's undefined, or a callable (a global function or a macro).
struct Value {
  enum class Kind { kUndefined, kData, kFunction, kMacro };
  Kind kind = Kind::kUndefined;
  Json data;
  std::string function;         // kFunction: the global's name
  const Node* macro = nullptr;  // kMacro

  static Value of(Json j) {
    Value v;
    v.kind = Kind::kData;
    v.data = std::move(j);
    return v;
  }
  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_data() const { return kind == Kind::kData; }
};

// Dict keys. JSON objects key by string; Python dicts also by integer (templates build lookup tables such as
// {4096: 512}). An integer key is stored as kIntKeyMark + its digits and reads back as the integer wherever keys
// are read (iteration, items(), keys(), dictsort, repr); tojson writes its digits, as json.dumps does.
inline constexpr std::string_view kIntKeyMark = "\x1fint:";
std::string int_dict_key(int64_t key);
Json dict_key_value(const std::string& key);  // the integer of a marked key, else the string
std::string dict_key_text(const std::string& key);  // the digits of a marked key, else the key

std::string type_name(const Value& v);  // Python's type names: "str", "int", "list", "dict", "none", ...
bool truthy(const Value& v);            // Python truthiness; undefined is false
std::string to_str(const Value& v);     // str(): what {{ value }} prints; undefined prints ""
std::string python_float(double d);     // repr(float): "3.0", "2.5", "1e+16"
std::string python_string_repr(const std::string& s);
std::string python_repr(const Json& j);  // repr(): "['a', 1, None]", "{'k': True}"
// json.dumps(j, ensure_ascii=False, indent=indent) (indent < 0: none), appended to `out`; false when it stopped
// early because `out` grew past `max_bytes`.
bool append_json(std::string& out, const Json& j, int32_t indent, int32_t level, size_t max_bytes);
// The UTF-8 characters of `s`, each as its byte range: Python indexes strings by character.
std::vector<std::string_view> utf8_chars(std::string_view s);
// str.strip/lstrip/rstrip(chars): `chars` null or not a string means whitespace.
std::string python_strip(const std::string& s, const Value* chars, bool left, bool right);

}  // namespace pagoda::jinja
