// select_chat_template: which chat template a server uses, and why (a line start-up prints): the --chat-template
// flag's built-in format when given; else the model's own Jinja template, run as written; else, when that does not
// parse, the built-in format whose markers it uses; else plain. Takes texts, not a model file.
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>

#include "chat/chat_template.h"

namespace pagoda {

struct ChatTemplateSources {
  std::optional<std::string> flag;            // --chat-template: plain | chatml | llama2 | llama3
  std::optional<std::string> model_template;  // the model's tokenizer.chat_template (Jinja)
  std::string bos_text;                       // the special tokens' texts, for a template's bos_token / eos_token
  std::string eos_text;
};

struct SelectedChatTemplate {
  ChatTemplate chat_template{ChatFormat::kPlain};
  std::string source;  // e.g. "the GGUF's tokenizer.chat_template (Jinja)"
};

// Errors: a flag naming no built-in format.
Result<SelectedChatTemplate> select_chat_template(const ChatTemplateSources& sources);

}  // namespace pagoda
