// The choice of chat template, in the order the header gives.
#include "chat/template_selection.h"

#include <fmt/format.h>

namespace pagoda {

Result<SelectedChatTemplate> select_chat_template(const ChatTemplateSources& s) {
  SelectedChatTemplate out;
  out.source = "plain (the model has no chat template)";
  if (s.flag && s.file_template)
    return make_error("invalid option: give --chat-template or --chat-template-file, not both");
  if (s.flag) {
    std::optional<ChatFormat> f = parse_chat_format(*s.flag);
    if (!f || *f == ChatFormat::kJinja)
      return make_error("invalid option: --chat-template must be plain, chatml, llama2 or llama3, got '" + *s.flag +
                        "'");
    out.chat_template = ChatTemplate(*f);
    out.source = std::string(chat_format_name(*f)) + " (--chat-template)";
    return out;
  }
  if (s.file_template) {
    Result<ChatTemplate> jinja = ChatTemplate::from_jinja(*s.file_template, s.bos_text, s.eos_text);
    if (!jinja.ok()) return make_error(fmt::format("--chat-template-file {}: {}", s.file_name, jinja.error()));
    out.chat_template = *jinja;
    out.source = fmt::format("{} (--chat-template-file, Jinja)", s.file_name);
    return out;
  }
  if (!s.model_template) return out;
  Result<ChatTemplate> jinja = ChatTemplate::from_jinja(*s.model_template, s.bos_text, s.eos_text);
  if (!jinja.ok()) {
    const std::optional<ChatFormat> markers = detect_chat_format(*s.model_template);
    return make_error(fmt::format(
        "the model's tokenizer.chat_template does not parse: {}; choose a template with --chat-template-file FILE "
        "or --chat-template {}",
        jinja.error(),
        markers ? fmt::format("{} (its markers are that format's)", chat_format_name(*markers))
                : std::string("plain|chatml|llama2|llama3")));
  }
  out.chat_template = *jinja;
  out.source = "the model's tokenizer.chat_template (Jinja)";
  return out;
}

}  // namespace pagoda
