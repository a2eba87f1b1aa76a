// A small JSON Schema validator for the grammar tests, written independently of the converter: the keywords the
// converter supports (type, enum, const, properties, required, additionalProperties, items/prefixItems/
// additionalItems, min/maxItems, uniqueItems, patternProperties (std::wregex search), propertyNames, min/maxProperties,
// dependentRequired/dependentSchemas/dependencies, not, if/then/else, anyOf, oneOf, allOf, $ref to local pointers,
// min/maxLength, pattern (std::wregex search), the supported formats (dates checked with calendar arithmetic), numeric
// bounds in both draft-04 and later spellings, boolean schemas). Returns "" when valid, else why not.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pagoda::grammar::testing {

std::string validate(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& instance);

}  // namespace pagoda::grammar::testing
