// Parsing JSON text that came from outside the process (model folders, datasets, stdin): invalid text and
// nesting deeper than a bound are errors, never exceptions. The depth bound matters beyond the parse itself:
// nlohmann::json copies, compares and dumps values recursively, so a value nested 100,000 deep parses fine and
// then overflows the stack in the first copy or error message that prints it.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pagoda {

// Deeper than any JSON a model folder or dataset holds (tokenizer.json nests about 6 levels).
constexpr int32_t kMaxUntrustedJsonDepth = 64;

// The value, or "invalid JSON at line 3, column 7: ..." / "JSON nested deeper than 64 levels" (no source name:
// the caller prefixes its file and key).
Result<nlohmann::json> parse_untrusted_json(std::string_view text, int32_t max_depth = kMaxUntrustedJsonDepth);

// Whether `text`, read as JSON, opens more than `max_depth` arrays or objects inside one another. Strings (and
// the brackets in them) are skipped; the text need not be valid JSON.
bool json_nesting_exceeds(std::string_view text, int32_t max_depth);

// A JSON value spelled for a one-line error message: dumped with invalid UTF-8 replaced, cut after `max_bytes`.
std::string json_excerpt(const nlohmann::json& value, size_t max_bytes = 80);

}  // namespace pagoda
