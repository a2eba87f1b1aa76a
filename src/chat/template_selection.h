// select_chat_template: which chat template a server uses, and why (a line start-up prints): the --chat-template
// flag's built-in format, or --chat-template-file's Jinja template, when given; else the model's own Jinja
// template, run as written; else plain (a model without a template). A model template that does not parse is an
// error naming why and the flags that choose another (never a silent replacement). Takes texts, not a model file.
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>

#include "chat/chat_template.h"

namespace pagoda {

struct ChatTemplateSources {
  std::optional<std::string> flag;            // --chat-template: plain | chatml | llama2 | llama3
  std::optional<std::string> file_template;   // --chat-template-file's text (Jinja)
  std::string file_name;                      // ... and its path, for messages
  std::optional<std::string> model_template;  // the model's tokenizer.chat_template (Jinja)
  std::string bos_text;                       // the special tokens' texts, for a template's bos_token / eos_token
  std::string eos_text;
};

struct SelectedChatTemplate {
  ChatTemplate chat_template{ChatFormat::kPlain};
  std::string source;  // e.g. "the GGUF's tokenizer.chat_template (Jinja)"
};

// Errors: a flag naming no built-in format; both flags; a file or model template that does not parse.
Result<SelectedChatTemplate> select_chat_template(const ChatTemplateSources& sources);

}  // namespace pagoda
