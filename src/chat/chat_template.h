// ChatTemplate: turns a chat (system/user/assistant messages) into the prompt text a model was trained on.
// Built-in formats: plain (contents joined by newlines: models without a chat format, like the bundled
// stories260K), chatml (<|im_start|>role ... <|im_end|>), llama2 ([INST] ... [/INST]) and llama3
// (<|start_header_id|>role<|end_header_id|> ... <|eot_id|>). A model's own Jinja template (a GGUF's
// tokenizer.chat_template, an HF tokenizer_config.json's chat_template) can instead be run as written: from_jinja.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/jinja_template.h"
#include "chat/reasoning_parser.h"
#include "chat/tool_call_parser.h"
#include "chat/tool_definitions.h"
#include "pagoda/status.h"

namespace pagoda {

struct ChatMessage {
  std::string role;  // system | user | assistant | developer | tool
  std::string content;
  // Default member initializers: a {role, content} aggregate stays complete (-Wmissing-field-initializers).
  std::vector<ToolCall> tool_calls = {};  // an assistant's calls
  std::string tool_call_id = {};          // a tool message: the call it answers
  std::string name = {};                  // a tool message: the function's name, when given
  std::string reasoning_content = {};     // an assistant's reasoning, given back (Qwen3's and gpt-oss's templates
                                          // read it as reasoning_content / thinking)
};

// A message's tool calls as text in Hermes' format (<tool_call>{"name", "arguments"}</tool_call>), for the
// built-in formats, which have no tool-call syntax of their own.
std::string tool_calls_text(std::span<const ToolCall> calls);

enum class ChatFormat { kPlain, kChatml, kLlama2, kLlama3, kJinja };  // kJinja: a template program, not built in

std::string_view chat_format_name(ChatFormat format);
std::optional<ChatFormat> parse_chat_format(std::string_view name);  // "plain" | "chatml" | "llama2" | "llama3"
                                                                     // (the built-ins; never kJinja)
// The format whose markers a Jinja template text uses; nullopt when it matches none.
std::optional<ChatFormat> detect_chat_format(std::string_view jinja_template);

// Renders a Jinja chat template the way transformers' apply_chat_template does: the context is {messages: [{role,
// content}...], add_generation_prompt, bos_token, eos_token} plus `extra_context`'s keys (e.g. date_string,
// enable_thinking, tools). Errors are returned, never thrown: raise_exception and type errors as kInvalidArgument,
// a render past its JinjaLimits as kLimitExceeded, one stopped by `should_stop` as kCancelled.
Result<std::string> render_jinja_chat(const JinjaTemplate& program, std::span<const ChatMessage> messages,
                                      bool add_generation_prompt, std::string_view bos_token,
                                      std::string_view eos_token,
                                      const nlohmann::ordered_json& extra_context = nlohmann::ordered_json::object(),
                                      const JinjaShouldStop& should_stop = {});

// A chat format: one of the built-ins, or a parsed Jinja program (shared, immutable: copies are cheap).
class ChatTemplate {
 public:
  explicit ChatTemplate(ChatFormat format) : format_(format) {}
  // Parses a model's Jinja template; render() then runs it. The text it renders includes whatever the template
  // writes of bos_token (Llama 3 starts with it), so the caller's tokenizer must not add a second BOS.
  static Result<ChatTemplate> from_jinja(std::string source, std::string bos_token, std::string eos_token);
  ChatFormat format() const { return format_; }
  // Whether the template renders a `tools` context value itself (a Jinja template that mentions it); when not,
  // the server puts default_tool_prompt in a system message.
  bool renders_tools() const;
  // The tool-call format the model writes: its template's markers (tool_call_format_of_template); Hermes' for the
  // built-in formats, as default_tool_prompt asks.
  ToolCallFormat tool_call_format() const;
  // The reasoning syntax its text shows (reasoning_syntax_of_template); none for the built-in formats.
  ReasoningSyntax reasoning_syntax() const;
  // Whether a Jinja template reads the context value `name` (its text names it): reasoning_effort (gpt-oss),
  // enable_thinking (Qwen3). False for the built-in formats.
  bool reads_variable(std::string_view name) const;
  // The prompt text; with `add_generation_prompt`, ends where the assistant's reply begins. For the built-in
  // formats BOS is not part of the text: the caller's tokenizer adds it. A Jinja template that fails (e.g.
  // raise_exception on roles that do not alternate) renders "": use try_render to see why.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  // render(), with a Jinja template's errors as values (built-in formats never fail), as render_jinja_chat
  // reports them; `should_stop` (e.g. "past the request's deadline, or shutting down") ends a long render early.
  Result<std::string> try_render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra_context = nlohmann::ordered_json::object(),
                                 const JinjaShouldStop& should_stop = {}) const;
  // Whether `role` is one this template renders.
  static bool is_known_role(std::string_view role);
  // The same template, rendering a leading system message as the start of the first user message instead
  // (system text, a blank line, user text): for templates that refuse a system role (Gemma's), as llama.cpp does.
  ChatTemplate with_system_merged_into_first_user() const;
  bool merges_system_into_first_user() const { return merge_system_; }

 private:
  std::string render_builtin(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  // The Jinja program and its special tokens; only with kJinja.
  struct JinjaProgram {
    JinjaTemplate program;
    std::string bos_token;
    std::string eos_token;
    bool renders_tools = false;
    ToolCallFormat tool_call_format = ToolCallFormat::kHermes;
    ReasoningSyntax reasoning_syntax = ReasoningSyntax::kNone;
    std::string source;
  };
  ChatFormat format_;
  std::shared_ptr<const JinjaProgram> jinja_;
  bool merge_system_ = false;
};

}  // namespace pagoda
