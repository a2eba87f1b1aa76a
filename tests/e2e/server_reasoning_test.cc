// Reasoning output end to end: `pagoda serve` with the bundled model under two chat templates given by
// --chat-template-file, one that opens a <think> reasoning at the end of its prompt (DeepSeek-R1's and Qwen3's
// way) and one in gpt-oss's harmony format, driven by the official openai and Anthropic npm packages
// (node_clients/reasoning_test.mjs); the start-up line that says how reasoning is read, and --reasoning-format's
// bad value refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

// Plain text turns, tools by name (the model cannot read a schema), and the assistant's turn opened inside
// <think> unless enable_thinking is false, as Qwen3's template closes it.
constexpr const char* kThinkTemplate =
    "{% for m in messages %}{{ m.content }}\n{% endfor %}"
    "{% if tools %}tools: {% for t in tools %}{{ t.function.name }} {% endfor %}as <tool_call>\n{% endif %}"
    "{% if add_generation_prompt %}{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}";
// Harmony's messages, reasoning_effort in the system part as gpt-oss's template writes it.
constexpr const char* kHarmonyTemplate =
    "{% if reasoning_effort is defined %}Reasoning: {{ reasoning_effort }}\n{% endif %}"
    "{% if tools %}tools: {% for t in tools %}{{ t.function.name }} {% endfor %}\n{% endif %}"
    "{% for m in messages %}{% if m.role == 'assistant' %}<|start|>assistant<|channel|>final<|message|>"
    "{% else %}<|start|>{{ m.role }}<|message|>{% endif %}{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}";

TEST(ServerReasoningTest, OpenAiAndAnthropicSdksReadTheReasoningApart) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  for (const char* package : {"openai", "@anthropic-ai/sdk"})
    ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/" + package))
        << package << " is missing: `make test` installs it (npm ci in " << dir << ")";
  const TempDir templates;
  write_file(templates.path() + "/think.jinja", kThinkTemplate);
  write_file(templates.path() + "/harmony.jinja", kHarmonyTemplate);
  ServerProcess think({"--chat-template-file", templates.path() + "/think.jinja"});
  ASSERT_TRUE(think.started()) << think.log();
  EXPECT_THAT(think.log(), HasSubstr("reasoning: <think>...</think> as reasoning_content (--reasoning-format auto; "
                                     "the template shows think_tags)"));
  ServerProcess harmony({"--chat-template-file", templates.path() + "/harmony.jinja"});
  ASSERT_TRUE(harmony.started()) << harmony.log();
  EXPECT_THAT(harmony.log(), HasSubstr("reasoning: harmony's analysis channel as reasoning_content"));
  const std::string out = run_command("node " + dir + "/reasoning_test.mjs http://127.0.0.1:" +
                                      std::to_string(think.port()) + " http://127.0.0.1:" +
                                      std::to_string(harmony.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

TEST(ServerReasoningTest, ReasoningFormatFlag) {
  ServerProcess plain({});
  ASSERT_TRUE(plain.started()) << plain.log();
  EXPECT_THAT(plain.log(), HasSubstr("reasoning: left in the content (--reasoning-format auto; the template shows none)"));
  ServerProcess deepseek({"--reasoning-format", "deepseek"});
  ASSERT_TRUE(deepseek.started()) << deepseek.log();
  EXPECT_THAT(deepseek.log(), HasSubstr("reasoning: <think>...</think> as reasoning_content (--reasoning-format "
                                        "deepseek; the template shows none)"));
  const ProcessResult bad = run_pagoda({"serve", "--reasoning-format", "deepseek-legacy", "--port", "0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--reasoning-format must be auto, none or deepseek, got 'deepseek-legacy'"));
}

// Ollama's think: true/false through the template's enable_thinking (false closes the <think> block: a longer
// prompt), a level through reasoning_effort (harmony's template writes it: a longer prompt again), refused where the
// template reads no reasoning_effort, and Ollama's own refusal for a model without reasoning syntax.
TEST(ServerReasoningTest, OllamasThinkActsThroughTheTemplate) {
  const TempDir templates;
  write_file(templates.path() + "/think.jinja", kThinkTemplate);
  write_file(templates.path() + "/harmony.jinja", kHarmonyTemplate);
  ServerProcess think({"--chat-template-file", templates.path() + "/think.jinja"});
  ASSERT_TRUE(think.started()) << think.log();
  ServerProcess harmony({"--chat-template-file", templates.path() + "/harmony.jinja"});
  ASSERT_TRUE(harmony.started()) << harmony.log();
  ServerProcess plain({});
  ASSERT_TRUE(plain.started()) << plain.log();
  auto chat = [](int port, const nlohmann::json& think_value) {
    nlohmann::json body = {{"model", "stories260K"},
                           {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                           {"stream", false},
                           {"options", {{"num_predict", 2}}}};
    if (!think_value.is_null()) body["think"] = think_value;
    return http_request(port, "POST", "/api/chat", body.dump());
  };
  auto prompt_tokens = [](const HttpReply& r) { return nlohmann::json::parse(r.body)["prompt_eval_count"].get<int>(); };

  const HttpReply on = chat(think.port(), true), off = chat(think.port(), false), unset = chat(think.port(), nullptr);
  ASSERT_EQ(on.status, 200) << on.body;
  ASSERT_EQ(off.status, 200) << off.body;
  ASSERT_EQ(unset.status, 200) << unset.body;
  EXPECT_GT(prompt_tokens(off), prompt_tokens(on));
  EXPECT_EQ(prompt_tokens(unset), prompt_tokens(on));
  const HttpReply level = chat(think.port(), "high");
  EXPECT_EQ(level.status, 400);
  EXPECT_THAT(level.body, HasSubstr("'think': this model's chat template reads no reasoning_effort"));
  EXPECT_THAT(http_request(think.port(), "POST", "/api/show", R"({"model":"stories260K"})").body,
              HasSubstr("\"thinking\""));

  const HttpReply high = chat(harmony.port(), "high"), plain_on = chat(harmony.port(), true);
  ASSERT_EQ(high.status, 200) << high.body;
  ASSERT_EQ(plain_on.status, 200) << plain_on.body;
  EXPECT_GT(prompt_tokens(high), prompt_tokens(plain_on));

  const HttpReply refused = chat(plain.port(), true);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(nlohmann::json::parse(refused.body)["error"], "\"stories260K\" does not support thinking");
  EXPECT_EQ(chat(plain.port(), false).status, 200);
  EXPECT_THAT(http_request(plain.port(), "POST", "/api/show", R"({"model":"stories260K"})").body,
              ::testing::Not(HasSubstr("\"thinking\"")));
}

}  // namespace
}  // namespace pagoda::e2e
