// ToolCallParser (tool_call_parser.h): marker search with a held-back tail, then JSON parsing of the calls.
#include "chat/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace pagoda {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kXmlFunctionOpen = "<function=";
constexpr std::string_view kXmlParameterOpen = "<parameter=";

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// {"name": "...", "arguments" | "parameters": {...} or "..."} -> a call; nullopt when it is not one.
std::optional<ToolCall> call_from_json(const nlohmann::ordered_json& j) {
  if (!j.is_object()) return std::nullopt;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  ToolCall c;
  c.name = name->get<std::string>();
  if (args == j.end() || args->is_null()) {
    c.arguments = "{}";
  } else if (args->is_string()) {
    c.arguments = args->get<std::string>();  // already JSON text, as OpenAI sends it
  } else if (args->is_object()) {
    c.arguments = args->dump();
  } else {
    return std::nullopt;
  }
  return c;
}

// Qwen3.5's (and Qwen3-Coder's) call inside <tool_call>: <function=NAME> then <parameter=KEY>VALUE</parameter>
// per argument, </function>. A value that reads as JSON other than a string (a number, a bool, an object) is
// that value; anything else is its text, one newline on each side dropped as the template writes them.
std::optional<ToolCall> call_from_xml(std::string_view body) {
  body.remove_prefix(kXmlFunctionOpen.size());
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos || name_end == 0) return std::nullopt;
  ToolCall c;
  c.name = std::string(trim(body.substr(0, name_end)));
  if (c.name.empty()) return std::nullopt;
  body.remove_prefix(name_end + 1);
  nlohmann::ordered_json args = nlohmann::ordered_json::object();
  for (;;) {
    body = trim(body);
    if (body.empty() || body.starts_with("</function>")) break;
    if (!body.starts_with(kXmlParameterOpen)) return std::nullopt;
    body.remove_prefix(kXmlParameterOpen.size());
    const size_t key_end = body.find('>');
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(trim(body.substr(0, key_end)));
    body.remove_prefix(key_end + 1);
    const size_t value_end = body.find("</parameter>");
    std::string_view value = body.substr(0, value_end);  // the last one may be cut off by the output's end
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    const auto parsed = nlohmann::ordered_json::parse(value, nullptr, false);
    args[key] = !parsed.is_discarded() && !parsed.is_string() ? parsed : nlohmann::ordered_json(std::string(value));
    if (value_end == std::string_view::npos) break;
    body.remove_prefix(value_end + std::string_view("</parameter>").size());
  }
  c.arguments = args.dump();
  return c;
}

bool append_calls(const nlohmann::ordered_json& j, std::vector<ToolCall>* calls) {
  if (j.is_array()) {
    if (j.empty()) return false;
    for (const auto& item : j) {
      std::optional<ToolCall> c = call_from_json(item);
      if (!c) return false;
      calls->push_back(std::move(*c));
    }
    return true;
  }
  std::optional<ToolCall> c = call_from_json(j);
  if (!c) return false;
  calls->push_back(std::move(*c));
  return true;
}

// The end (one past) of the JSON object or string starting at text[i], or npos when the text ends first.
size_t json_value_end(std::string_view text, size_t i) {
  int32_t depth = 0;
  bool in_string = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// A forced call array cut short (by max_tokens): its complete calls, then the cut one as far as it got, as OpenAI
// returns a call cut by length: its name once written in full, its arguments' text so far. nullopt when not even
// one call has a name.
std::optional<std::vector<ToolCall>> salvage_call_array(std::string_view held) {
  const std::string_view t = trim(held);
  if (!t.starts_with('[')) return std::nullopt;
  std::vector<ToolCall> calls;
  auto skip = [&](size_t i, std::string_view chars) {
    while (i < t.size() && chars.find(t[i]) != std::string_view::npos) ++i;
    return i;
  };
  for (size_t i = skip(1, " \t\r\n,"); i < t.size() && t[i] == '{'; i = skip(i, " \t\r\n,")) {
    const size_t end = json_value_end(t, i);
    if (end != std::string_view::npos) {
      const auto j = nlohmann::ordered_json::parse(t.substr(i, end - i), nullptr, false);
      std::optional<ToolCall> c = j.is_discarded() ? std::nullopt : call_from_json(j);
      if (!c) return std::nullopt;
      calls.push_back(std::move(*c));
      i = end;
      continue;
    }
    // The cut call: {"name": "...", "arguments": ...
    size_t k = skip(i + 1, " \t\r\n");
    if (t.substr(k).starts_with("\"name\"")) {
      k = skip(skip(k + 6, " \t\r\n:"), " \t\r\n");
      const size_t name_end = k < t.size() && t[k] == '"' ? json_value_end(t, k) : std::string_view::npos;
      const auto name = name_end == std::string_view::npos
                            ? nlohmann::ordered_json()
                            : nlohmann::ordered_json::parse(t.substr(k, name_end - k), nullptr, false);
      if (name.is_string() && !name.get<std::string>().empty()) {
        ToolCall c;
        c.name = name.get<std::string>();
        k = skip(name_end, " \t\r\n,");
        if (t.substr(k).starts_with("\"arguments\"")) c.arguments = std::string(t.substr(skip(k + 11, " \t\r\n:")));
        calls.push_back(std::move(c));
      }
    }
    break;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<std::vector<ToolCall>> parse_held(std::string_view held, ToolCallFormat format) {
  std::vector<ToolCall> calls;
  switch (format) {
    case ToolCallFormat::kHermes: {
      // <tool_call>JSON</tool_call>, repeated; the last close tag may be missing (the output ended).
      std::string_view rest = held;
      while (!trim(rest).empty()) {
        rest = trim(rest);
        if (!rest.starts_with(kHermesOpen)) return std::nullopt;
        rest.remove_prefix(kHermesOpen.size());
        const size_t close = rest.find(kHermesClose);
        const std::string_view body = close == std::string_view::npos ? rest : rest.substr(0, close);
        if (trim(body).starts_with(kXmlFunctionOpen)) {
          std::optional<ToolCall> c = call_from_xml(trim(body));
          if (!c) return std::nullopt;
          calls.push_back(std::move(*c));
        } else {
          const auto j = nlohmann::ordered_json::parse(body, nullptr, false);
          if (j.is_discarded() || !append_calls(j, &calls)) return std::nullopt;
        }
        rest = close == std::string_view::npos ? std::string_view() : rest.substr(close + kHermesClose.size());
      }
      break;
    }
    case ToolCallFormat::kMistral: {
      std::string_view body = trim(held);
      if (!body.starts_with(kMistralMarker)) return std::nullopt;
      body.remove_prefix(kMistralMarker.size());
      const auto j = nlohmann::ordered_json::parse(body, nullptr, false);
      if (j.is_discarded() || !append_calls(j, &calls)) return std::nullopt;
      break;
    }
    case ToolCallFormat::kLlama3Json: {
      std::string_view body = trim(held);
      if (body.starts_with(kPythonTag)) body = trim(body.substr(kPythonTag.size()));
      // One object, or several joined by ';' (Llama 3.2's parallel calls).
      size_t start = 0;
      while (start < body.size()) {
        size_t end = body.find(';', start);
        // A ';' inside a string would split a call: try the longest piece that parses.
        std::string_view piece;
        nlohmann::ordered_json j;
        for (;;) {
          piece = body.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
          j = nlohmann::ordered_json::parse(piece, nullptr, false);
          if (!j.is_discarded() || end == std::string_view::npos) break;
          end = body.find(';', end + 1);
        }
        if (j.is_discarded() || !append_calls(j, &calls)) return std::nullopt;
        start = end == std::string_view::npos ? body.size() : end + 1;
      }
      break;
    }
    case ToolCallFormat::kJsonArray: {
      const auto j = nlohmann::ordered_json::parse(held, nullptr, false);
      if (j.is_discarded()) return salvage_call_array(held);
      if (!j.is_array() || !append_calls(j, &calls)) return std::nullopt;
      break;
    }
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

ToolCallFormat tool_call_format_of_template(std::string_view source) {
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find(kPythonTag) != std::string_view::npos ||
      (source.find("<|start_header_id|>") != std::string_view::npos && source.find("tools") != std::string_view::npos))
    return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kHermes;
}

std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name) {
  if (name == "hermes") return ToolCallFormat::kHermes;
  if (name == "mistral") return ToolCallFormat::kMistral;
  if (name == "llama3_json") return ToolCallFormat::kLlama3Json;
  return std::nullopt;
}

std::string_view tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kJsonArray: return "json_array";
  }
  return "hermes";
}

std::string ToolCallParser::push(std::string_view text) {
  if (in_call_) {
    held_.append(text);
    return {};
  }
  held_.append(text);
  if (format_ == ToolCallFormat::kJsonArray) {  // forced: the whole output is the calls
    in_call_ = true;
    return {};
  }
  if (content_only_) {
    std::string out;
    out.swap(held_);
    return out;
  }
  if (format_ == ToolCallFormat::kLlama3Json) {
    // A call is the whole output: its first non-space characters decide.
    const std::string_view t = trim(held_);
    if (t.empty()) return {};
    if (t.front() == '{' || t.starts_with(kPythonTag)) {
      in_call_ = true;
      return {};
    }
    if (kPythonTag.starts_with(t)) return {};
    content_only_ = true;  // no call can follow
    std::string out;
    out.swap(held_);
    return out;
  }
  const std::string_view marker = format_ == ToolCallFormat::kMistral ? kMistralMarker : kHermesOpen;
  const size_t at = held_.find(marker);
  if (at != std::string::npos) {
    std::string out = held_.substr(0, at);
    held_.erase(0, at);
    in_call_ = true;
    return out;
  }
  // Hold back the longest tail that could begin the marker.
  size_t keep = 0;
  for (size_t len = std::min(held_.size(), marker.size() - 1); len > 0; --len) {
    if (marker.starts_with(std::string_view(held_).substr(held_.size() - len))) {
      keep = len;
      break;
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

ToolCallParser::Result ToolCallParser::finish() {
  Result r;
  if (in_call_) {
    if (std::optional<std::vector<ToolCall>> calls = parse_held(held_, format_)) {
      r.calls = std::move(*calls);
      held_.clear();
      return r;
    }
  }
  // A forced call array is the grammar's text, not the model's words: cut before any call had a name, it is dropped.
  if (format_ == ToolCallFormat::kJsonArray) held_.clear();
  r.content.swap(held_);
  return r;
}

ToolCallParser::Result parse_tool_calls(std::string_view text, ToolCallFormat format) {
  ToolCallParser parser(format);
  std::string content = parser.push(text);
  ToolCallParser::Result r = parser.finish();
  r.content = content + r.content;
  return r;
}

}  // namespace pagoda
