// JSON Schema -> Grammar (response_format json_schema, vLLM guided_json, tool parameters), and the grammar of any
// JSON object (response_format json_object). Every output the grammar allows is a JSON text that validates
// against the schema; a keyword the grammar cannot enforce is an error naming it and where it is
// ("schema at #/properties/tags: 'uniqueItems' is not supported"), never silently dropped. Keywords unknown to JSON
// Schema, and annotations (title, description, default, examples, $comment, ...), constrain nothing and are
// ignored, as a validator ignores them.
//
// Supported: type (and type arrays); enum, const (beside other keywords: those of a type no listed value has, and
// unknown ones, are ignored); properties, required, additionalProperties (false, true, a schema; absent means any,
// after the listed properties; JsonGrammarOptions::closed_objects makes it none), patternProperties (up to 4
// patterns: each subset of them is one kind of name, by DFA products and differences), propertyNames (a string
// schema's pattern, format, lengths, or an enum), minProperties (up to the required count, or 1), maxProperties
// (when no more properties may appear); dependencies, dependentRequired, dependentSchemas (up to 6: each trigger
// absent, or present with what it needs; lists of names, any number, held in an any-order object's tracked sets); items, prefixItems, draft-04..2019 items arrays and additionalItems,
// minItems, maxItems; uniqueItems over items of a few listed scalars (enum, const, boolean, null: one rule per set
// of values written); contains with minContains/maxContains where the complement of its schema is expressible (see
// `not`), without maxItems or prefix items; anyOf; allOf (merged; anyOf lists in several members combined
// pairwise); oneOf, made exclusive: branches not provably disjoint (distinct types, or a required property with distinct const/enum
// values) each exclude the others through `not`; not, where the complement is expressible (types other than a
// lone integer, enum/const of strings, numbers, booleans and null, numeric bounds, lengths and counts, pattern,
// required, properties of expressible complements, and anyOf/allOf/not of those); if/then/else as (if and then)
// or (not if and else); $ref to local JSON pointers (#, #/$defs/..., #/definitions/..., any #/... path), recursion
// included, $ref with siblings (merged from 2019-09 on; in draft-04/06/7 the siblings are ignored, see
// JsonSchemaDialect); string minLength, maxLength (from 2048 and up to 2^20 only without a
// pattern or format: blocks of a rule), pattern (regex_parser.h), format (date, time, date-time, uuid, email, uri,
// ipv4, ipv6, hostname: each its RFC's grammar, see the format table for the corners; JSON Schema's other formats are refused, names it does not define are annotations); integer and number minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (draft-04 boolean and draft-06+ numeric forms, decimal bounds included; see
// json_number_range.h), multipleOf (10^-n: fraction digits; a divisor of 1000: last digits); boolean schemas.
// Properties come in `properties` order (as written in the text; see the ordered_json overload), optional ones may
// be left out; or, with JsonGrammarOptions::any_property_order, in any order as a validator accepts them (every
// required one present once, extra ones anywhere between; see the option for when an optional one may repeat). Whitespace: none inside the document's first and last bytes; between tokens at most one space, or
// one newline and up to max_indent spaces or tabs, so a model cannot loop on whitespace. Unbounded numbers: at most 19
// integer digits (a 64-bit integer's), 16 fraction digits and a 2-digit exponent; bounded ones: see
// json_number_range.h. A schema without `type` allows every type, each held only to its own keywords ({"maximum":
// 5} allows any string); absent `items`/`additionalItems` after a positional list allow any further items; an
// enum/const object may list its members in any order under any_property_order.
#pragma once

#include <pagoda/status.h>

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

// The JSON Schema draft a schema is read in: its root's `$schema` when that names one of these, else
// JsonGrammarOptions::dialect. What differs: in draft-04/06/07 a schema with `$ref` is that reference alone (the
// keywords beside it are ignored), and their `hostname` is RFC 1123's (draft-07 adds IDNA's reserved forms).
// Unspecified reads a schema so that every output is valid in every draft: keywords beside `$ref` apply, and
// `hostname` takes draft-07's rules. `format` is asserted in every draft (2019-09 and 2020-12 make it an annotation
// unless a vocabulary asks: structured output wants the format it names).
enum class JsonSchemaDialect { kUnspecified, kDraft4, kDraft6, kDraft7, kDraft2019_09, kDraft2020_12 };
// "draft4", "draft6", "draft7", "draft2019-09", "draft2020-12" (the JSON Schema Test Suite's folder names), or
// nullopt.
std::optional<JsonSchemaDialect> parse_json_schema_dialect(std::string_view name);
// The name parse_json_schema_dialect reads ("unspecified" for kUnspecified).
std::string_view json_schema_dialect_name(JsonSchemaDialect dialect);

struct JsonGrammarOptions {
  bool allow_whitespace = true;  // false: compact JSON only
  int32_t max_indent = 20;       // spaces/tabs after a newline
  // An object schema without additionalProperties: false (default) allows other properties of any value, as JSON
  // Schema says; true allows only its listed ones (OpenAI's `"strict": true`, where every object must list all).
  bool closed_objects = false;
  // false: an object's listed properties come in `properties` order (OpenAI's documented behaviour, and vLLM's and
  // llguidance's). true: in any order. An object of at most 7 listed properties tracks them all, a larger one its
  // required ones alone: one rule per set of them already written, so each comes at most once, while the schema's
  // total of such rules' states stays under 2^15. Untracked (optional) ones come anywhere, like extra properties,
  // so one may be written twice (each value valid: a parser keeps one). An object of more than 7 required
  // properties, or over the budget, keeps `properties` order (JsonSchemaNotes counts them).
  bool any_property_order = false;
  // The draft of a schema whose `$schema` names none (see JsonSchemaDialect).
  JsonSchemaDialect dialect = JsonSchemaDialect::kUnspecified;
};

// What a conversion decided that its grammar does not say.
struct JsonSchemaNotes {
  int32_t objects_any_order = 0;     // objects whose properties may come in any order
  int32_t objects_schema_order = 0;  // objects kept in `properties` order although any_property_order asked otherwise
  int32_t objects_repeatable = 0;    // any-order objects with optional properties untracked (they may repeat)
};

// An ordered_json keeps the order of `properties` as written (nlohmann::json would sort the keys).
Result<Grammar> json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& options = {},
                                       const BuildLimits& limits = {}, JsonSchemaNotes* notes = nullptr);
// Parses `schema_text` first, keeping key order (an error names the JSON syntax problem).
Result<Grammar> json_schema_to_grammar(std::string_view schema_text, const JsonGrammarOptions& options = {},
                                       const BuildLimits& limits = {}, JsonSchemaNotes* notes = nullptr);
// Any JSON object.
Result<Grammar> json_object_grammar(const JsonGrammarOptions& options = {});

}  // namespace pagoda::grammar
