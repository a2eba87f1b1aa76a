// probe_grammar: answers questions about one grammar spec, for `pagoda grammar` and the tests that check the
// grammar module against outside validators (the JSON Schema Test Suite with ajv): random sentences of the
// grammar, and whether given texts are sentences. One request and one answer per JSON line:
//   request: {"kind": "json_schema"|"json_object"|"gbnf"|"regex"|"choice", "schema": {...} (json_schema) or
//             "text": "..." (gbnf, regex; a schema as text also works) or "choices": [...], "samples": N,
//             "seed": S, "max_bytes": B, "texts": ["...", ...], "any_property_order": false (json_schema: objects'
//             properties in any order, JsonGrammarOptions::any_property_order), "dialect": "draft7" (json_schema:
//             the draft of a schema without $schema, JsonGrammarOptions::dialect)}
//   answer:  {"ok": true, "samples": [...], "accepted": [true, ...]} or {"ok": false, "error": "..."}
// Not used when serving.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_spec.h"

namespace pagoda::grammar {

struct ProbeRequest {
  GrammarSpec spec;
  int32_t num_samples = 0;
  uint64_t seed = 1;
  uint64_t soft_max_bytes = 64;  // random sentences head for their end past this many bytes
  std::vector<std::string> texts;
};

struct ProbeAnswer {
  Status status;  // the spec's compile error, if any
  std::vector<std::string> samples;
  std::vector<bool> accepted;  // per text
};

ProbeAnswer probe_grammar(const ProbeRequest& request);
// The JSON-line protocol above: a request line in, an answer line out (a malformed request is an answer with
// ok: false).
std::string probe_grammar_json_line(std::string_view request_line);

}  // namespace pagoda::grammar
