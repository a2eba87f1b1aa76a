// parse_ordered_json: JSON text -> nlohmann::ordered_json in time linear in the text. ordered_json keeps an object's
// keys in the order written (a schema's properties are generated in that order), but its own parser looks each key
// up by a linear scan of the object, so one object with n keys costs n^2 / 2 string comparisons: a request with a
// 50,000-key `$defs` spent seconds in the parse alone. This parser indexes the keys of each open object by hash.
// Duplicate keys keep their first position and their last value, as nlohmann's parser does.
#pragma once

#include <pagoda/status.h>

#include <nlohmann/json.hpp>
#include <string_view>

namespace pagoda {

// The value, or "invalid JSON: parse error at line 1, column 2: ..." (kInvalidArgument). No depth bound: callers
// that take text from outside check json_nesting_exceeds (core/json_text.h) first.
Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text);

}  // namespace pagoda
