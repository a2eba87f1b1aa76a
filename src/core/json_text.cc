// Untrusted JSON text: a depth scan before nlohmann parses it, and exceptions turned into Status.
#include "core/json_text.h"

#include <fmt/format.h>

namespace pagoda {

bool json_nesting_exceeds(std::string_view text, int32_t max_depth) {
  int64_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Result<nlohmann::json> parse_untrusted_json(std::string_view text, int32_t max_depth) {
  if (json_nesting_exceeds(text, max_depth))
    return make_error(fmt::format("JSON nested deeper than {} levels", max_depth), StatusCode::kInvalidArgument);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." without the id.
    std::string_view what = e.what();
    if (const size_t at = what.find("] "); what.starts_with("[json.exception") && at != std::string_view::npos)
      what.remove_prefix(at + 2);
    return make_error(fmt::format("invalid JSON: {}", what), StatusCode::kInvalidArgument);
  }
}

std::string json_excerpt(const nlohmann::json& value, size_t max_bytes) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > max_bytes) {
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    text.resize(cut);
    text += "...";
  }
  return text;
}

}  // namespace pagoda
