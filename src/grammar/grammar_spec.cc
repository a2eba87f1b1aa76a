// GrammarSpec (grammar_spec.h): cache keys and the front-end dispatch.
#include "grammar/grammar_spec.h"

#include <fmt/format.h>

#include "grammar/gbnf_parser.h"
#include "grammar/regex_parser.h"

namespace pagoda::grammar {

std::string_view kind_name(GrammarSpec::Kind kind) {
  switch (kind) {
    case GrammarSpec::Kind::kJsonSchema: return "json_schema";
    case GrammarSpec::Kind::kJsonObject: return "json_object";
    case GrammarSpec::Kind::kGbnf: return "gbnf";
    case GrammarSpec::Kind::kRegex: return "regex";
    case GrammarSpec::Kind::kChoice: return "choice";
  }
  return "?";
}

std::string GrammarSpec::cache_key() const {
  // Length-prefixed fields: no two specs share a key.
  std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}:", kind_name(kind), json_options.allow_whitespace, json_options.max_indent,
                  json_options.closed_objects, json_options.any_property_order,
                  json_schema_dialect_name(json_options.dialect), text.size());
  key += text;
  for (const std::string& c : choices) {
    key += fmt::format("|{}:", c.size());
    key += c;
  }
  return key;
}

Result<Grammar> grammar_from_spec(const GrammarSpec& spec, const BuildLimits& limits) {
  switch (spec.kind) {
    case GrammarSpec::Kind::kJsonSchema:
      return json_schema_to_grammar(std::string_view(spec.text), spec.json_options, limits);
    case GrammarSpec::Kind::kJsonObject: return json_object_grammar(spec.json_options);
    case GrammarSpec::Kind::kGbnf: return parse_gbnf(spec.text, limits);
    case GrammarSpec::Kind::kRegex: return parse_regex(spec.text, limits);
    case GrammarSpec::Kind::kChoice: {
      if (spec.choices.empty()) return make_error("choice: the list of choices is empty", StatusCode::kInvalidArgument);
      GrammarBuilder b;
      const int32_t root = b.add_rule("root");
      std::vector<GrammarBuilder::Expr> alts;
      for (const std::string& c : spec.choices) alts.push_back(b.literal(c));
      b.set_body(root, b.choice(std::move(alts)));
      Result<Grammar> g = b.build(root, limits);
      if (!g.ok()) return make_error("choice: " + g.error(), g.status().code());
      return g;
    }
  }
  return make_error("unknown grammar kind", StatusCode::kInvalidArgument);
}

}  // namespace pagoda::grammar
