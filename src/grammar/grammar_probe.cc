// probe_grammar / probe_grammar_json_line (grammar_probe.h).
#include "grammar/grammar_probe.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/random_sentence.h"

namespace pagoda::grammar {

ProbeAnswer probe_grammar(const ProbeRequest& request) {
  ProbeAnswer answer;
  Result<Grammar> g = grammar_from_spec(request.spec);
  if (!g.ok()) {
    answer.status = g.status();
    return answer;
  }
  auto compiled = std::make_shared<const CompiledGrammar>(std::move(g).value(), TokenVocabulary::bytes());
  std::mt19937_64 rng(request.seed);
  RandomSentenceOptions options;
  options.soft_max_bytes = request.soft_max_bytes;
  options.hard_max_bytes = request.soft_max_bytes * 64 + 4096;
  for (int32_t i = 0; i < request.num_samples; ++i) {
    std::optional<std::string> s = random_sentence(compiled, rng, options);
    if (s) answer.samples.push_back(std::move(*s));
  }
  for (const std::string& text : request.texts) {
    GrammarMatcher m(compiled, 0);
    answer.accepted.push_back(m.accept_bytes(text) && m.can_end());
  }
  return answer;
}

std::string probe_grammar_json_line(std::string_view request_line) {
  using json = nlohmann::ordered_json;
  auto fail = [](const std::string& message) { return json{{"ok", false}, {"error", message}}.dump(); };
  json r;
  try {
    r = json::parse(request_line);
  } catch (const json::parse_error& e) {
    return fail(std::string("request is not JSON: ") + e.what());
  }
  if (!r.is_object()) return fail("request must be a JSON object");
  ProbeRequest req;
  const std::string kind = r.value("kind", "json_schema");
  if (kind == "json_schema") {
    req.spec.kind = GrammarSpec::Kind::kJsonSchema;
    if (r.contains("schema")) {
      req.spec.text = r["schema"].dump();
    } else {
      req.spec.text = r.value("text", "");
    }
  } else if (kind == "json_object") {
    req.spec.kind = GrammarSpec::Kind::kJsonObject;
  } else if (kind == "gbnf" || kind == "regex") {
    req.spec.kind = kind == "gbnf" ? GrammarSpec::Kind::kGbnf : GrammarSpec::Kind::kRegex;
    if (!r.contains("text") || !r["text"].is_string()) return fail("'text' must be a string");
    req.spec.text = r["text"].get<std::string>();
  } else if (kind == "choice") {
    req.spec.kind = GrammarSpec::Kind::kChoice;
    if (!r.contains("choices") || !r["choices"].is_array()) return fail("'choices' must be an array");
    for (const json& c : r["choices"]) {
      if (!c.is_string()) return fail("'choices' must list strings");
      req.spec.choices.push_back(c.get<std::string>());
    }
  } else {
    return fail("unknown kind '" + kind + "'");
  }
  // A non-negative integer field, at most `max`; nullopt when it is something else.
  auto count = [&](const char* key, uint64_t fallback, uint64_t max) -> std::optional<uint64_t> {
    if (!r.contains(key)) return fallback;
    const json& v = r[key];
    if (v.is_number_unsigned() && v.get<uint64_t>() <= max) return v.get<uint64_t>();
    return std::nullopt;
  };
  const std::optional<uint64_t> samples = count("samples", 0, 10000);
  const std::optional<uint64_t> seed = count("seed", 1, ~uint64_t(0));
  const std::optional<uint64_t> max_bytes = count("max_bytes", 64, 100000);
  if (!samples) return fail("'samples' must be an integer in [0, 10000]");
  if (!seed) return fail("'seed' must be a non-negative integer");
  if (!max_bytes) return fail("'max_bytes' must be an integer in [0, 100000]");
  req.num_samples = int32_t(*samples);
  req.seed = *seed;
  req.soft_max_bytes = *max_bytes;
  if (r.contains("any_property_order")) {
    if (!r["any_property_order"].is_boolean()) return fail("'any_property_order' must be a boolean");
    req.spec.json_options.any_property_order = r["any_property_order"].get<bool>();
  }
  if (r.contains("dialect")) {
    const std::optional<JsonSchemaDialect> d =
        r["dialect"].is_string() ? parse_json_schema_dialect(r["dialect"].get<std::string>()) : std::nullopt;
    if (!d) return fail("'dialect' must be one of draft4, draft6, draft7, draft2019-09, draft2020-12, unspecified");
    req.spec.json_options.dialect = *d;
  }
  if (r.contains("texts")) {
    if (!r["texts"].is_array()) return fail("'texts' must be an array");
    for (const json& t : r["texts"]) {
      if (!t.is_string()) return fail("'texts' must list strings");
      req.texts.push_back(t.get<std::string>());
    }
  }
  const ProbeAnswer a = probe_grammar(req);
  if (!a.status.ok()) return fail(a.status.message());
  json out = {{"ok", true}, {"samples", a.samples}, {"accepted", json::array()}};
  for (const bool b : a.accepted) out["accepted"].push_back(b);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pagoda::grammar
