// Type-confused variants of a JSON document, for fuzz tests of the readers of JSON files and bodies: every
// value in the document (found by its JSON pointer) replaced in turn by one of a fixed set of values of every
// JSON type, including extremes (huge unsigned, negative, floats that fit no integer, empty and nested
// containers, invalid-looking strings). Deterministic: the same document always gives the same variants.
// Header-only test support; no product code.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pagoda::testing_support {

// One replacement of each JSON type (and the edge values readers mishandle).
template <class Json = nlohmann::json>
std::vector<Json> type_confused_values() {
  return {Json(nullptr),
          Json(true),
          Json(false),
          Json(0),
          Json(-1),
          Json(int64_t(INT64_MIN)),
          Json(uint64_t(18446744073709551615u)),
          Json(4294967296),  // 2^32
          Json(2147483648),  // 2^31
          Json(1.5),
          Json(-0.0),
          Json(1e300),
          Json(""),
          Json("x"),
          Json("\xed\xa0\x80 lone surrogate bytes \xff"),  // not valid UTF-8: dump() would throw on it
          Json::array(),
          Json::array({1, "a", nullptr}),
          Json::array({Json::array({Json::array()})}),
          Json::object(),
          Json::object({{"type", "x"}, {"id", 1}, {"content", 5}, {"name", nullptr}})};
}

// Every JSON pointer in `doc` (the root included), depth first.
template <class Json = nlohmann::json>
std::vector<typename Json::json_pointer> json_pointers(const Json& doc) {
  std::vector<typename Json::json_pointer> out;
  std::function<void(const Json&, const typename Json::json_pointer&)> walk = [&](const Json& v, const auto& at) {
    out.push_back(at);
    if (v.is_object()) {
      for (const auto& [key, child] : v.items()) walk(child, at / key);
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) walk(v[i], at / i);
    }
  };
  walk(doc, typename Json::json_pointer());
  return out;
}

// Calls `check(variant, where)` for `doc` with each value replaced by each type-confused value, and with each
// object member removed. `where` names the change ("/model/vocab/a = [1,"a",null]") for SCOPED_TRACE.
// `max_pointers` keeps big documents' variants bounded (pointers are taken evenly spaced).
template <class Json = nlohmann::json>
void for_each_type_confusion(const Json& doc, const std::function<void(const Json&, const std::string&)>& check,
                             size_t max_pointers = 400) {
  const std::vector<typename Json::json_pointer> pointers = json_pointers(doc);
  const std::vector<Json> values = type_confused_values<Json>();
  const size_t stride = pointers.size() <= max_pointers ? 1 : (pointers.size() + max_pointers - 1) / max_pointers;
  for (size_t p = 0; p < pointers.size(); p += stride) {
    const auto& at = pointers[p];
    for (const Json& value : values) {
      Json variant = doc;
      variant[at] = value;
      check(variant, at.to_string() + " = " + value.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    if (!at.empty() && doc[at.parent_pointer()].is_object()) {
      Json variant = doc;
      variant[at.parent_pointer()].erase(at.back());
      check(variant, at.to_string() + " removed");
    }
  }
}

}  // namespace pagoda::testing_support
