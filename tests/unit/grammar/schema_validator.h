// A small JSON Schema validator for the grammar tests, written independently of the converter: the keywords the
// converter supports (type, enum, const, properties, required, additionalProperties, items/prefixItems/
// additionalItems, min/maxItems, uniqueItems, contains with min/maxContains, patternProperties (std::wregex search),
// propertyNames, min/maxProperties,
// dependentRequired/dependentSchemas/dependencies, not, if/then/else, anyOf, oneOf, allOf, $ref to local pointers,
// min/maxLength, pattern (std::wregex search), the supported formats (dates checked with calendar arithmetic), numeric
// bounds in both draft-04 and later spellings, boolean schemas). Returns "" when valid, else why not.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace pagoda::grammar::testing {

std::string validate(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& instance);

// A key of `listed` that some object of the JSON text names twice (a parsed value keeps only one of them), or "".
// Other names are not checked: a grammar cannot tell apart the names of extra properties (additionalProperties).
std::string duplicate_listed_key(const std::string& text, const std::set<std::string>& listed);
// Every name some `properties` of the schema lists, at any depth.
std::set<std::string> listed_property_names(const nlohmann::ordered_json& schema);

}  // namespace pagoda::grammar::testing
