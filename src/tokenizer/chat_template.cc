// ChatTemplate: the built-in chat formats, written out as their reference Jinja templates render them.
#include "tokenizer/chat_template.h"

namespace pagoda {

std::string_view chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kPlain: return "plain";
    case ChatFormat::kChatml: return "chatml";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kLlama3: return "llama3";
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

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  std::string out;
  switch (format_) {
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
