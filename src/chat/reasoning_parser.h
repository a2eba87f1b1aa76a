// ReasoningParser: splits a model's output, while it streams, into its reasoning (what OpenAI-compatible servers
// return as reasoning_content) and its answer. Two syntaxes: think tags (<think>...</think>, then the answer:
// Qwen3, DeepSeek-R1 and its distills, SmolLM3), where a template that ends its prompt with <think> makes the
// output start inside the reasoning; and gpt-oss's harmony channels (<|channel|>analysis<|message|>...<|end|>
// <|start|>assistant<|channel|>final<|message|>...), whose commentary messages to=functions.NAME are tool calls.
// Text that may still turn out to be a marker is held back, never sent as either part. Owns only that state:
// it knows no tool-call syntax but harmony's, no protocol and no tokens. One parser per output; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_definitions.h"

namespace pagoda {

enum class ReasoningSyntax { kNone, kThinkTags, kHarmony };

// The syntax a chat template's text shows: harmony's channels, think tags, or none.
ReasoningSyntax reasoning_syntax_of_template(std::string_view template_source);
std::string_view reasoning_syntax_name(ReasoningSyntax syntax);  // none | think_tags | harmony

// How a server treats reasoning (llama-server's --reasoning-format): auto extracts it where the template shows a
// syntax; deepseek extracts it always (think tags when the template shows none); none leaves it in the content.
enum class ReasoningFormat { kAuto, kNone, kDeepseek };
std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name);  // auto | none | deepseek
std::string_view reasoning_format_name(ReasoningFormat format);
// The syntax the parser reads for a template under a format.
ReasoningSyntax reasoning_syntax_for(ReasoningFormat format, ReasoningSyntax template_syntax);

// Whether the rendered prompt leaves the model inside its reasoning: it ends with <think> (DeepSeek-R1's
// templates, Qwen3's thinking variants), or with harmony's analysis header.
bool prompt_opens_reasoning(ReasoningSyntax syntax, std::string_view prompt);

// The texts around a reasoning that a constrained answer follows: `open` starts it (empty: the output always
// begins in it, as harmony's analysis does), `close` ends it and the answer follows (</think>; harmony's
// final-channel header). Empty `close` for kNone.
struct ReasoningBounds {
  std::string_view open;
  std::string_view close;
};
ReasoningBounds reasoning_bounds(ReasoningSyntax syntax);

struct ReasoningPieces {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;  // harmony's commentary calls, whole, once their message ended
};

class ReasoningParser {
 public:
  // `starts_in_reasoning`: prompt_opens_reasoning's answer. `harmony_calls`: harmony's function calls become
  // calls (a request with tools); without, their text stays content. `only_if_closed` (with starts_in_reasoning,
  // think tags): the output is reasoning only up to a </think> it writes; one that never writes it is all content
  // (the output of a grammar that leaves no room to reason, e.g. a JSON schema), held until the end.
  ReasoningParser(ReasoningSyntax syntax, bool starts_in_reasoning, bool harmony_calls = true,
                  bool only_if_closed = false);

  // The next piece of output; returns what can be sent now.
  ReasoningPieces push(std::string_view text);
  // At the end of the output: what was held back. A reasoning never closed stays reasoning (an output cut by
  // max_tokens); a harmony header never completed is content.
  ReasoningPieces finish();
  // Whether the text pushed last is reasoning, or (only_if_closed) may turn out to be: for counting reasoning
  // tokens, which count only if some reasoning came out.
  bool in_reasoning() const;
  ReasoningSyntax syntax() const { return syntax_; }

 private:
  enum class State { kStart, kReasoning, kContent, kHeader, kBody, kUndecided };
  void push_think(ReasoningPieces* out);
  void push_harmony(ReasoningPieces* out);
  // Harmony: a message body's text goes where its header says.
  void route_body(std::string_view text, ReasoningPieces* out);
  void end_message(ReasoningPieces* out);

  ReasoningSyntax syntax_;
  bool harmony_calls_;
  State state_;
  std::string held_;        // text not yet routed: a possible marker, a header, or whitespace at the reasoning's end
  bool trim_next_ = false;  // skip whitespace before the next text (after <think> or </think>)
  size_t undecided_scanned_ = 0;  // kUndecided: held_ holds no </think> before this
  // The harmony message being read.
  enum class Route { kReasoning, kContent, kCall };
  Route route_ = Route::kContent;
  std::string call_name_;
  std::string call_arguments_;
  bool seen_message_ = false;  // harmony: a message body began (text before one is plain content)
};

// Parses one whole output (non-streamed responses): push everything, then finish.
ReasoningPieces parse_reasoning(std::string_view text, ReasoningSyntax syntax, bool starts_in_reasoning,
                                bool harmony_calls = true, bool only_if_closed = false);

}  // namespace pagoda
