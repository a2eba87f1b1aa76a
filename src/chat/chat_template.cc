// ChatTemplate: the built-in chat formats, written out as their reference Jinja templates render them, and the
// adapter that runs a model's own Jinja template over a chat.
#include "chat/chat_template.h"

#include <algorithm>

#include <string>

#include "chat/jinja_budget.h"

namespace pagoda {

std::string_view chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kPlain: return "plain";
    case ChatFormat::kChatml: return "chatml";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kJinja: return "jinja";
  }
  return "?";
}

std::optional<ChatFormat> parse_chat_format(std::string_view name) {
  for (ChatFormat f : {ChatFormat::kPlain, ChatFormat::kChatml, ChatFormat::kLlama2, ChatFormat::kLlama3})
    if (chat_format_name(f) == name) return f;
  return std::nullopt;
}

std::optional<ChatFormat> detect_chat_format(std::string_view t) {
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatml;
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::kLlama2;
  return std::nullopt;
}

bool ChatTemplate::is_known_role(std::string_view role) {
  return role == "system" || role == "user" || role == "assistant" || role == "developer" || role == "tool";
}

Result<std::string> render_jinja_chat(const JinjaTemplate& program, std::span<const ChatMessage> messages,
                                      bool add_generation_prompt, std::string_view bos_token,
                                      std::string_view eos_token, const nlohmann::ordered_json& extra_context,
                                      const JinjaShouldStop& should_stop) {
  // Copying recurses: a context nested deeper than any render may hold is refused before the copy.
  const int32_t max_depth = JinjaLimits{}.max_value_depth;
  if (jinja::json_footprint(extra_context, INT64_MAX, max_depth).depth > max_depth)
    return make_error("jinja: the context nests lists or dicts deeper than " + std::to_string(max_depth) + " levels",
                      StatusCode::kLimitExceeded);
  // extra_context's keys win over the four below. It is copied whole and the four set only when absent: an
  // ordered_json inserts by a linear search, so adding its keys one by one would be quadratic in their number.
  nlohmann::ordered_json context = extra_context.is_object() ? extra_context : nlohmann::ordered_json::object();
  const auto set_default = [&context](const char* key, nlohmann::ordered_json value) {
    if (!context.contains(key)) context[key] = std::move(value);
  };
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json msg = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      // As transformers' templates expect: arguments as a mapping when they are a JSON object.
      nlohmann::ordered_json calls = nlohmann::ordered_json::array();
      for (const ToolCall& c : m.tool_calls) {
        nlohmann::ordered_json args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
        if (args.is_discarded()) args = c.arguments;
        calls.push_back(
            {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", std::move(args)}}}});
      }
      msg["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) msg["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) msg["name"] = m.name;
    if (!m.reasoning_content.empty()) {
      msg["reasoning_content"] = m.reasoning_content;  // Qwen3's name
      msg["thinking"] = m.reasoning_content;           // gpt-oss's
    }
    list.push_back(std::move(msg));
  }
  set_default("messages", std::move(list));
  set_default("add_generation_prompt", add_generation_prompt);
  set_default("bos_token", std::string(bos_token));
  set_default("eos_token", std::string(eos_token));
  return program.render(context, should_stop);
}

Result<ChatTemplate> ChatTemplate::from_jinja(std::string source, std::string bos_token, std::string eos_token) {
  Result<JinjaTemplate> program = JinjaTemplate::parse(source);
  if (!program.ok()) return program.status();
  ChatTemplate chat(ChatFormat::kJinja);
  const bool renders_tools = source.find("tools") != std::string::npos;
  const ToolCallFormat tool_format = tool_call_format_of_template(source);
  const ReasoningSyntax reasoning = reasoning_syntax_of_template(source);
  chat.jinja_ = std::make_shared<const JinjaProgram>(JinjaProgram{std::move(program).value(), std::move(bos_token),
                                                                  std::move(eos_token), renders_tools, tool_format,
                                                                  reasoning, std::move(source)});
  return chat;
}

bool ChatTemplate::renders_tools() const { return jinja_ != nullptr && jinja_->renders_tools; }

ToolCallFormat ChatTemplate::tool_call_format() const {
  return jinja_ != nullptr ? jinja_->tool_call_format : ToolCallFormat::kHermes;
}

ReasoningSyntax ChatTemplate::reasoning_syntax() const {
  return jinja_ != nullptr ? jinja_->reasoning_syntax : ReasoningSyntax::kNone;
}

bool ChatTemplate::reads_variable(std::string_view name) const {
  return jinja_ != nullptr && jinja_->source.find(name) != std::string::npos;
}

std::string tool_calls_text(std::span<const ToolCall> calls) {
  std::string out;
  for (const ToolCall& c : calls) {
    nlohmann::ordered_json args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
    if (args.is_discarded()) args = c.arguments;
    if (!out.empty()) out += '\n';
    out += "<tool_call>\n" + nlohmann::ordered_json{{"name", c.name}, {"arguments", std::move(args)}}.dump() +
           "\n</tool_call>";
  }
  return out;
}

ChatTemplate ChatTemplate::with_system_merged_into_first_user() const {
  ChatTemplate t = *this;
  t.merge_system_ = true;
  return t;
}

Result<std::string> ChatTemplate::try_render(std::span<const ChatMessage> all_messages, bool add_generation_prompt,
                                             const nlohmann::ordered_json& extra_context,
                                             const JinjaShouldStop& should_stop) const {
  std::vector<ChatMessage> merged;
  std::span<const ChatMessage> messages = all_messages;
  if (merge_system_ && all_messages.size() >= 2 && all_messages[0].role == "system" &&
      all_messages[1].role == "user") {
    merged.assign(all_messages.begin() + 1, all_messages.end());
    merged[0].content = all_messages[0].content + "\n\n" + merged[0].content;
    messages = merged;
  }
  if (format_ != ChatFormat::kJinja) return render_builtin(messages, add_generation_prompt);
  if (!jinja_) return make_error("chat template: kJinja without a program (use ChatTemplate::from_jinja)");
  return render_jinja_chat(jinja_->program, messages, add_generation_prompt, jinja_->bos_token, jinja_->eos_token,
                           extra_context, should_stop);
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  Result<std::string> text = try_render(messages, add_generation_prompt);
  return text.ok() ? std::move(text).value() : std::string();
}

std::string ChatTemplate::render_builtin(std::span<const ChatMessage> all_messages, bool add_generation_prompt) const {
  // The built-in formats know no tool calls: an assistant's calls become text of its turn.
  std::vector<ChatMessage> with_calls;
  std::span<const ChatMessage> messages = all_messages;
  if (std::any_of(all_messages.begin(), all_messages.end(),
                  [](const ChatMessage& m) { return !m.tool_calls.empty(); })) {
    with_calls.assign(all_messages.begin(), all_messages.end());
    for (ChatMessage& m : with_calls) {
      if (m.tool_calls.empty()) continue;
      if (!m.content.empty()) m.content += '\n';
      m.content += tool_calls_text(m.tool_calls);
    }
    messages = with_calls;
  }
  std::string out;
  switch (format_) {
    case ChatFormat::kJinja: break;  // not a built-in: try_render runs the program
    case ChatFormat::kPlain:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i > 0) out += '\n';
        out += messages[i].content;
      }
      break;
    case ChatFormat::kChatml:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kLlama3:
      for (const ChatMessage& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kLlama2: {
      // Meta's format: the system prompt folds into the first user turn; each exchange is one [INST] block,
      // closed by EOS and reopened by BOS (written as </s><s>, as the reference template does).
      std::string system;
      bool first_turn = true;
      for (const ChatMessage& m : messages) {
        if (m.role == "system" || m.role == "developer") {
          system = m.content;
        } else if (m.role == "assistant") {
          out += " " + m.content + " </s>";
        } else {
          if (!first_turn) out += "<s>";
          out += "[INST] ";
          if (!system.empty()) {
            out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
            system.clear();
          }
          out += m.content + " [/INST]";
          first_turn = false;
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace pagoda
