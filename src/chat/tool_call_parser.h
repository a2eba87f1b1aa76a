// ToolCallParser: finds the tool calls in a model's output, as its chat format writes them, while the output
// streams: the text before a call goes out as content at once; from a call's first marker on, the text is held
// until the end and parsed into calls (or, when it is no valid call after all, given back as content).
// Formats: Hermes / Qwen (<tool_call>{"name", "arguments"}</tool_call>, any number; or inside the tags Qwen3.5's
// <function=NAME><parameter=KEY>VALUE</parameter></function>), Mistral ([TOOL_CALLS] and a
// JSON array of calls), Llama 3.x (an output that is one JSON object {"name", "parameters"}, or several joined by
// ';', after an optional <|python_tag|>), and the JSON array of calls that tool_choice "required" forces
// (tool_definitions.h). One parser per choice; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_definitions.h"

namespace pagoda {

enum class ToolCallFormat { kHermes, kMistral, kLlama3Json, kJsonArray };

// The format a model's template writes (its tool-call markers), Hermes when it shows none: that is the format of
// default_tool_prompt.
ToolCallFormat tool_call_format_of_template(std::string_view template_source);
std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name);  // hermes | mistral | llama3_json
std::string_view tool_call_format_name(ToolCallFormat format);  // the names parse_tool_call_format takes

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format) : format_(format) {}

  // The next piece of output; returns the content that can be sent now.
  std::string push(std::string_view text);
  struct Result {
    std::vector<ToolCall> calls;
    std::string content;  // what was held back and turned out to be content
  };
  // At the end of the output.
  Result finish();
  // Whether a call has begun (text is being held for it).
  bool in_call() const { return in_call_; }
  ToolCallFormat format() const { return format_; }

 private:
  ToolCallFormat format_;
  bool in_call_ = false;
  std::string held_;           // a tail that may begin a marker, or (in_call_) everything from the marker on
  bool content_only_ = false;  // Llama 3 JSON: the output began as content, so no call follows
};

// Parses one whole output (non-streamed responses): push everything, then finish.
ToolCallParser::Result parse_tool_calls(std::string_view text, ToolCallFormat format);

}  // namespace pagoda
