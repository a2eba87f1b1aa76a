// ChatTemplate: turns a chat (system/user/assistant messages) into the prompt text a model was trained on.
// Built-in formats: plain (contents joined by newlines: models without a chat format, like the bundled
// stories260K), chatml (<|im_start|>role ... <|im_end|>), llama2 ([INST] ... [/INST]) and llama3
// (<|start_header_id|>role<|end_header_id|> ... <|eot_id|>). A GGUF's tokenizer.chat_template (Jinja) is
// recognised by the markers of these formats; rendering arbitrary Jinja is not done here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pagoda {

struct ChatMessage {
  std::string role;  // system | user | assistant | developer | tool
  std::string content;
};

enum class ChatFormat { kPlain, kChatml, kLlama2, kLlama3 };

std::string_view chat_format_name(ChatFormat format);
std::optional<ChatFormat> parse_chat_format(std::string_view name);  // "plain" | "chatml" | "llama2" | "llama3"
// The format whose markers a Jinja template text uses; nullopt when it matches none.
std::optional<ChatFormat> detect_chat_format(std::string_view jinja_template);

class ChatTemplate {
 public:
  explicit ChatTemplate(ChatFormat format) : format_(format) {}
  ChatFormat format() const { return format_; }
  // The prompt text; with `add_generation_prompt`, ends where the assistant's reply begins. BOS is not part of
  // the text: the caller's tokenizer adds it.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  // Whether `role` is one this template renders.
  static bool is_known_role(std::string_view role);

 private:
  ChatFormat format_;
};

}  // namespace pagoda
