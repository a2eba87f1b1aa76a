// ChatTemplate: each built-in format's exact text, and recognising a GGUF's Jinja template.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda {
namespace {

const std::vector<ChatMessage> kChat = {
    {"system", "Be kind."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Tell a story"}};

TEST(ChatTemplateTest, PlainJoinsContents) {
  EXPECT_EQ(ChatTemplate(ChatFormat::kPlain).render(kChat, true), "Be kind.\nHi\nHello!\nTell a story");
  EXPECT_EQ(ChatTemplate(ChatFormat::kPlain).render(std::vector<ChatMessage>{{"user", "Once upon a time"}}, true),
            "Once upon a time");
}

TEST(ChatTemplateTest, Chatml) {
  EXPECT_EQ(ChatTemplate(ChatFormat::kChatml).render(kChat, true),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!"
            "<|im_end|>\n<|im_start|>user\nTell a story<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Llama3) {
  EXPECT_EQ(
      ChatTemplate(ChatFormat::kLlama3).render(std::vector<ChatMessage>{{"user", "Hi"}}, true),
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama3).render(std::vector<ChatMessage>{{"user", "Hi"}}, false),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplateTest, Llama2FoldsTheSystemPromptIntoTheFirstTurn) {
  EXPECT_EQ(ChatTemplate(ChatFormat::kLlama2).render(kChat, true),
            "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Tell a story [/INST]");
}

TEST(ChatTemplateTest, DetectsTheFormatOfAJinjaTemplate) {
  EXPECT_EQ(detect_chat_format("{% for m in messages %}<|im_start|>{{ m.role }}..."), ChatFormat::kChatml);
  EXPECT_EQ(detect_chat_format("{{ '<|start_header_id|>' + message['role'] }}"), ChatFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("{{ bos_token + '[INST] ' + content }}"), ChatFormat::kLlama2);
  EXPECT_EQ(detect_chat_format("{{ messages }}"), std::nullopt);
  EXPECT_EQ(parse_chat_format("chatml"), ChatFormat::kChatml);
  EXPECT_EQ(parse_chat_format("jinja"), std::nullopt);
  EXPECT_TRUE(ChatTemplate::is_known_role("tool"));
  EXPECT_FALSE(ChatTemplate::is_known_role("wizard"));
}

}  // namespace
}  // namespace pagoda
