// GrammarSpec: a request's output constraint as the server receives it (response_format json_schema / json_object,
// llama.cpp's `grammar`, vLLM's guided_json / guided_regex / guided_choice / guided_grammar), and grammar_from_spec,
// which runs the matching front end. A plain value; its cache_key identifies the grammar it compiles to.
#pragma once

#include <pagoda/status.h>

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"
#include "grammar/json_schema_converter.h"

namespace pagoda::grammar {

struct GrammarSpec {
  enum class Kind {
    kJsonSchema,  // text: the schema as JSON text
    kJsonObject,  // any JSON object
    kGbnf,        // text: llama.cpp GBNF
    kRegex,       // text: the whole output matches it
    kChoice,      // choices: the output is one of them
  };
  Kind kind = Kind::kJsonObject;
  std::string text;
  std::vector<std::string> choices;
  JsonGrammarOptions json_options;

  std::string cache_key() const;
};

std::string_view kind_name(GrammarSpec::Kind kind);

// Errors are kInvalidArgument and name what is wrong (the server's 400).
Result<Grammar> grammar_from_spec(const GrammarSpec& spec, const BuildLimits& limits = {});

}  // namespace pagoda::grammar
