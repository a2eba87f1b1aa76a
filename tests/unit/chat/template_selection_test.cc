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

TEST(SelectChatTemplate, AnUnparsableTemplateFallsBackToTheFormatOfItsMarkers) {
  Result<SelectedChatTemplate> s =
      select_chat_template(sources(std::nullopt, "{% for m in messages %}<|im_start|>{{ m.role }\n{% endfor"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kChatml);
  EXPECT_NE(s->source.find("does not parse"), std::string::npos);
}

TEST(SelectChatTemplate, AnUnparsableTemplateWithoutKnownMarkersIsPlain) {
  Result<SelectedChatTemplate> s = select_chat_template(sources(std::nullopt, "{% if %}"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chat_template.format(), ChatFormat::kPlain);
  EXPECT_NE(s->source.find("pass --chat-template"), std::string::npos);
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
