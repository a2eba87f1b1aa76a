// The choice of chat template, in the order the header gives.
#include "chat/template_selection.h"

namespace pagoda {

Result<SelectedChatTemplate> select_chat_template(const ChatTemplateSources& s) {
  SelectedChatTemplate out;
  out.source = "plain (the model has no chat template)";
  if (s.flag) {
    std::optional<ChatFormat> f = parse_chat_format(*s.flag);
    if (!f || *f == ChatFormat::kJinja)
      return make_error("invalid option: --chat-template must be plain, chatml, llama2 or llama3, got '" + *s.flag +
                        "'");
    out.chat_template = ChatTemplate(*f);
    out.source = std::string(chat_format_name(*f)) + " (--chat-template)";
    return out;
  }
  if (!s.model_template) return out;
  Result<ChatTemplate> jinja = ChatTemplate::from_jinja(*s.model_template, s.bos_text, s.eos_text);
  if (jinja.ok()) {
    out.chat_template = *jinja;
    out.source = "the model's tokenizer.chat_template (Jinja)";
  } else if (std::optional<ChatFormat> f = detect_chat_format(*s.model_template)) {
    out.chat_template = ChatTemplate(*f);
    out.source = std::string(chat_format_name(*f)) + " (the model's Jinja template does not parse: " + jinja.error() +
                 "; its markers are this built-in format's)";
  } else {
    out.source = "plain (the model's tokenizer.chat_template does not parse: " + jinja.error() +
                 "; pass --chat-template)";
  }
  return out;
}

}  // namespace pagoda
