// parse_output_constraint (constraint_params.h).
#include "server/constraint_params.h"
#include "core/ordered_json_parse.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace pagoda::server {
namespace {

using grammar::GrammarSpec;
// ordered_json: a schema keeps its properties in the order the client wrote them (the output follows it).
using ordered_json = nlohmann::ordered_json;

// A JSON schema given as an object, or as JSON text (vLLM takes both): the spec's text.
std::optional<ApiError> schema_text(const ordered_json& v, const std::string& param, std::string* out) {
  if (v.is_object() || v.is_boolean()) {
    *out = v.dump();
  } else if (v.is_string()) {
    const ordered_json parsed = parse_ordered_json(v.get<std::string>()).value_or(nullptr);
    if (!(parsed.is_object() || parsed.is_boolean()))
      return invalid_request(fmt::format("'{}' must be a JSON schema (an object, or its JSON text)", param), param);
    *out = v.get<std::string>();
  } else {
    return invalid_request(fmt::format("'{}' must be a JSON schema (an object, or its JSON text)", param), param);
  }
  return std::nullopt;
}

std::optional<ApiError> string_field(const ordered_json& v, const std::string& param, std::string* out) {
  if (!v.is_string() || v.get<std::string>().empty())
    return invalid_request(fmt::format("'{}' must be a non-empty string", param), param);
  *out = v.get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> choices_field(const ordered_json& v, const std::string& param, std::vector<std::string>* out) {
  if (!v.is_array() || v.empty())
    return invalid_request(fmt::format("'{}' must be a non-empty array of strings", param), param);
  for (const ordered_json& c : v) {
    if (!c.is_string()) return invalid_request(fmt::format("'{}' must be a non-empty array of strings", param), param);
    out->push_back(c.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_response_format(const ordered_json& v, std::optional<OutputConstraint>* out) {
  const std::string param = "response_format";
  if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
    return invalid_request("'response_format' must be an object with a string 'type'", param);
  const std::string type = v["type"].get<std::string>();
  for (const auto& [key, value] : v.items())
    if (key != "type" && !(type == "json_schema" && key == "json_schema"))
      return invalid_request(fmt::format("'response_format.{}' is not supported with type '{}'", key, type),
                             param + "." + key);
  if (type == "text") return std::nullopt;
  OutputConstraint c;
  c.param = param;
  if (type == "json_object") {
    c.spec.kind = GrammarSpec::Kind::kJsonObject;
  } else if (type == "json_schema") {
    auto js = v.find("json_schema");
    if (js == v.end() || !js->is_object())
      return invalid_request("'response_format.json_schema' must be an object with a 'schema'",
                             "response_format.json_schema");
    for (const auto& [key, value] : js->items()) {
      if (key != "name" && key != "description" && key != "schema" && key != "strict")
        return invalid_request(fmt::format("'response_format.json_schema.{}' is not supported", key),
                               "response_format.json_schema." + key);
    }
    if (js->contains("name") && !(*js)["name"].is_string())
      return invalid_request("'response_format.json_schema.name' must be a string", "response_format.json_schema.name");
    if (js->contains("strict") && !(*js)["strict"].is_boolean() && !(*js)["strict"].is_null())
      return invalid_request("'response_format.json_schema.strict' must be a boolean",
                             "response_format.json_schema.strict");
    // strict or not, the schema is enforced: a schema feature that cannot be is refused, never ignored.
    auto schema = js->find("schema");
    if (schema == js->end() || schema->is_null())
      return invalid_request("'response_format.json_schema.schema' is required", "response_format.json_schema.schema");
    c.param = "response_format.json_schema.schema";
    c.spec.kind = GrammarSpec::Kind::kJsonSchema;
    // OpenAI's strict mode: an object lists every property it may hold.
    c.spec.json_options.closed_objects = js->contains("strict") && (*js)["strict"].is_boolean() && (*js)["strict"].get<bool>();
    if (auto e = schema_text(*schema, c.param, &c.spec.text)) return e;
  } else {
    return invalid_request(fmt::format("'response_format.type' must be 'text', 'json_object' or 'json_schema', got "
                                       "'{}'",
                                       json_excerpt(nlohmann::json::parse(v["type"].dump()), 64)),
                           "response_format.type");
  }
  *out = std::move(c);
  return std::nullopt;
}

// One of vLLM's constraint fields (guided_* or a key of structured_outputs) named `param`, of kind `what`:
// json | regex | choice | grammar.
std::optional<ApiError> parse_guided(const ordered_json& v, std::string_view what, const std::string& param,
                                     OutputConstraint* c) {
  c->param = param;
  if (what == "json") {
    c->spec.kind = GrammarSpec::Kind::kJsonSchema;
    return schema_text(v, param, &c->spec.text);
  }
  if (what == "regex") {
    c->spec.kind = GrammarSpec::Kind::kRegex;
    return string_field(v, param, &c->spec.text);
  }
  if (what == "choice") {
    c->spec.kind = GrammarSpec::Kind::kChoice;
    return choices_field(v, param, &c->spec.choices);
  }
  c->spec.kind = GrammarSpec::Kind::kGbnf;
  return string_field(v, param, &c->spec.text);
}

std::optional<ApiError> parse_structured_outputs(const ordered_json& v, std::optional<OutputConstraint>* out) {
  const std::string param = "structured_outputs";
  if (!v.is_object()) return invalid_request("'structured_outputs' must be an object", param);
  std::optional<OutputConstraint> found;
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;
    const std::string field = param + "." + key;
    OutputConstraint c;
    if (key == "json" || key == "regex" || key == "choice" || key == "grammar") {
      if (auto e = parse_guided(value, key, field, &c)) return e;
    } else if (key == "json_object") {
      if (!value.is_boolean()) return invalid_request("'structured_outputs.json_object' must be a boolean", field);
      if (!value.get<bool>()) continue;
      c.param = field;
      c.spec.kind = GrammarSpec::Kind::kJsonObject;
    } else {
      return invalid_request(fmt::format("'{}' is not supported by this server (json, regex, choice, grammar and "
                                         "json_object are)",
                                         field),
                             field);
    }
    if (found)
      return invalid_request(fmt::format("'structured_outputs' may set one of json, regex, choice, grammar and "
                                         "json_object, got both '{}' and '{}'",
                                         found->param, field),
                             field);
    found = std::move(c);
  }
  if (!found) return invalid_request("'structured_outputs' sets no constraint", param);
  *out = std::move(found);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_output_constraint(const nlohmann::ordered_json& body, bool chat,
                                                std::optional<OutputConstraint>* out) {
  out->reset();
  std::optional<OutputConstraint> found;
  auto take = [&](std::optional<OutputConstraint> c) -> std::optional<ApiError> {
    if (!c) return std::nullopt;
    if (found)
      return invalid_request(
          fmt::format("a request may have one output constraint, got '{}' and '{}'", found->param, c->param), c->param);
    found = std::move(c);
    return std::nullopt;
  };
  for (const auto& [key, value] : body.items()) {
    if (value.is_null()) continue;
    std::optional<OutputConstraint> c;
    if (key == "response_format" && chat) {
      if (auto e = parse_response_format(value, &c)) return e;
    } else if (key == "structured_outputs") {
      if (auto e = parse_structured_outputs(value, &c)) return e;
    } else if (key == "guided_json" || key == "guided_regex" || key == "guided_choice" || key == "guided_grammar") {
      c.emplace();
      if (auto e = parse_guided(value, std::string_view(key).substr(7), key, &*c)) return e;
    } else if (key == "grammar") {  // llama.cpp's server: GBNF
      c.emplace();
      if (auto e = parse_guided(value, "grammar", key, &*c)) return e;
    } else {
      continue;
    }
    if (auto e = take(std::move(c))) return e;
  }
  *out = std::move(found);
  return std::nullopt;
}

}  // namespace pagoda::server
