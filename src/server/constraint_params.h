// The output constraint of a request, as the OpenAI and vLLM APIs spell it: response_format (text, json_object,
// json_schema), vLLM's guided_json / guided_regex / guided_choice / guided_grammar and structured_outputs, and
// llama.cpp's grammar. Pure parsing from the request's JSON to a GrammarSpec and the field it came from; the
// server compiles it (a spec that does not compile is a 400 naming that field). No engine, no tokenizer.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "grammar/grammar_spec.h"
#include "server/api_error.h"

namespace pagoda::server {

struct OutputConstraint {
  grammar::GrammarSpec spec;
  std::string param;  // the request field it came from: "response_format", "guided_json", "structured_outputs"...
};

// At most one constraint per request; two are a 400. response_format {"type": "text"} is no constraint.
// `chat`: response_format is a chat field.
std::optional<ApiError> parse_output_constraint(const nlohmann::ordered_json& body, bool chat,
                                                std::optional<OutputConstraint>* out);

}  // namespace pagoda::server
