// Tests for select_chat_template (src/chat/template_selection.h): the flag wins, a model's Jinja template runs as
// written, an unparsable one falls back to the built-in format whose markers it uses, else plain; a bad flag is an
// error naming the choices.
#include "chat/template_selection.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

std::string render(const ChatTemplate& t, const std::string& text) {
  const std::vector<ChatMessage> messages{{.role = "user", .content = text}};
  Result<std::string> r = t.try_render(messages, true);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : "";
}

ChatTemplateSources sources(std::optional<std::string> flag, std::optional<std::string> model_template = std::nullopt,
                            std::string bos_text = "", std::string eos_text = "") {
  ChatTemplateSources s;
  s.flag = std::move(flag);
  s.model_template = std::move(model_template);
  s.bos_text = std::move(bos_text);
  s.eos_text = std::move(eos_text);
  return s;
}

TEST(SelectChatTemplate, WithoutFlagOrModelTemplateItIsPlain) {
  Result<SelectedChatTemplate> s = select_chat_template({});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kPlain);
  EXPECT_NE(s->source.find("no chat template"), std::string::npos);
}

TEST(SelectChatTemplate, TheFlagWinsOverTheModelsTemplate) {
  Result<SelectedChatTemplate> s =
      select_chat_template(sources("chatml", "{{ messages[0]['content'] }}"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kChatml);
  EXPECT_NE(render(s->chat_template, "hi").find("<|im_start|>user"), std::string::npos);
  EXPECT_EQ(s->source, "chatml (--chat-template)");
}

TEST(SelectChatTemplate, AModelsJinjaTemplateRunsAsWrittenWithItsSpecialTokens) {
  Result<SelectedChatTemplate> s = select_chat_template(
      sources(std::nullopt, "{{ bos_token }}[{{ messages[0]['content'] }}]{{ eos_token }}", "<s>", "</s>"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kJinja);
  EXPECT_EQ(render(s->chat_template, "hi"), "<s>[hi]</s>");
}

TEST(SelectChatTemplate, AnUnparsableModelTemplateIsAnErrorNamingTheWayOut) {
  // Never a silent replacement: the reason, and the flags that choose another template (its markers' format named).
  Result<SelectedChatTemplate> s =
      select_chat_template(sources(std::nullopt, "{% for m in messages %}<|im_start|>{{ m.role }\n{% endfor"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("tokenizer.chat_template does not parse"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("--chat-template chatml (its markers are that format's)"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("--chat-template-file"), std::string::npos) << s.error();
  s = select_chat_template(sources(std::nullopt, "{% if %}"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("--chat-template plain|chatml|llama2|llama3"), std::string::npos) << s.error();
  // A flag chooses another one explicitly.
  s = select_chat_template(sources("chatml", "{% if %}"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kChatml);
}

TEST(SelectChatTemplate, AChatTemplateFileRunsAsJinjaInsteadOfTheModels) {
  ChatTemplateSources src = sources(std::nullopt, "{% if %}", "<s>", "</s>");
  src.file_template = "{{ bos_token }}<{{ messages[0]['content'] }}>";
  src.file_name = "mine.jinja";
  Result<SelectedChatTemplate> s = select_chat_template(src);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(render(s->chat_template, "hi"), "<s><hi>");
  EXPECT_EQ(s->source, "mine.jinja (--chat-template-file, Jinja)");
  src.file_template = "{% for %}";
  s = select_chat_template(src);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("--chat-template-file mine.jinja: "), std::string::npos) << s.error();
  src.flag = "chatml";
  s = select_chat_template(src);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("not both"), std::string::npos) << s.error();
}

TEST(SelectChatTemplate, ASystemMessageMergesIntoTheFirstUserTurnWhenAsked) {
  const char* gemma_like =
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "{% for m in messages %}[{{ m['role'] }}: {{ m['content'] }}]{% endfor %}";
  Result<SelectedChatTemplate> s = select_chat_template(sources(std::nullopt, gemma_like));
  ASSERT_TRUE(s.ok()) << s.error();
  const std::vector<ChatMessage> chat{{.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hi"}};
  EXPECT_FALSE(s->chat_template.try_render(chat, false).ok());
  const ChatTemplate merged = s->chat_template.with_system_merged_into_first_user();
  Result<std::string> text = merged.try_render(chat, false);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(*text, "[user: Be brief.\n\nHi]");
  // Without a system message, or when a user turn does not follow it, nothing changes.
  EXPECT_EQ(*merged.try_render(std::vector<ChatMessage>{{.role = "user", .content = "Hi"}}, false), "[user: Hi]");
}

TEST(SelectChatTemplate, AnUnknownFlagIsAnErrorNamingTheChoices) {
  for (const char* flag : {"jinja", "vicuna", ""}) {
    Result<SelectedChatTemplate> s = select_chat_template(sources(flag));
    ASSERT_FALSE(s.ok()) << flag;
    EXPECT_NE(s.error().find("plain, chatml, llama2 or llama3"), std::string::npos);
  }
}

}  // namespace
}  // namespace pagoda
