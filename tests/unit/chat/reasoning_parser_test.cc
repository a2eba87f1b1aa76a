// The reasoning parser (src/chat/reasoning_parser.h): think tags and harmony channels split whole and when the
// output arrives a byte at a time (a marker split anywhere never leaks into either part), a prompt that opens the
// reasoning, a reasoning cut by max_tokens, harmony's commentary calls, Qwen3.5's calls after a reasoning, and the
// syntax a template shows under each --reasoning-format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/reasoning_parser.h"
#include "chat/tool_call_parser.h"

namespace pagoda {
namespace {

// Feeds `text` in pieces of `step` bytes and joins everything the parser gave, finish() included.
ReasoningPieces stream(std::string_view text, ReasoningSyntax syntax, bool starts_in_reasoning, size_t step,
                       bool harmony_calls = true) {
  ReasoningParser parser(syntax, starts_in_reasoning, harmony_calls);
  ReasoningPieces all;
  auto add = [&all](ReasoningPieces p) {
    all.reasoning += p.reasoning;
    all.content += p.content;
    for (ToolCall& c : p.calls) all.calls.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); i += step) add(parser.push(text.substr(i, step)));
  add(parser.finish());
  return all;
}

// Every piece size gives the same split as the whole text.
void expect_split(std::string_view text, ReasoningSyntax syntax, bool opens, std::string_view reasoning,
                  std::string_view content) {
  for (size_t step : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(7), text.size() + 1}) {
    const ReasoningPieces p = stream(text, syntax, opens, step);
    EXPECT_EQ(p.reasoning, reasoning) << "step " << step;
    EXPECT_EQ(p.content, content) << "step " << step;
  }
}

TEST(ReasoningParserTest, ThinkTagsSplitReasoningFromAnswerAtAnyPieceSize) {
  expect_split("<think>\nThe user greets me.\n</think>\n\nHello!", ReasoningSyntax::kThinkTags, false,
               "The user greets me.", "Hello!");
  // Leading whitespace before <think>, and an answer's own inner whitespace kept.
  expect_split("\n<think>a < b </thin k></think>x  y\n", ReasoningSyntax::kThinkTags, false, "a < b </thin k>",
               "x  y\n");
}

TEST(ReasoningParserTest, NoThinkTagIsAllContent) {
  expect_split("Hello <think> there", ReasoningSyntax::kThinkTags, false, "", "Hello <think> there");
  expect_split("<thin", ReasoningSyntax::kThinkTags, false, "", "<thin");  // only a beginning of the tag
  // Content that begins like the tag streams once it differs from it.
  ReasoningParser parser(ReasoningSyntax::kThinkTags, false);
  EXPECT_EQ(parser.push("<th").content, "");
  EXPECT_EQ(parser.push("e end").content, "<the end");
}

TEST(ReasoningParserTest, PromptThatOpensTheReasoningStartsInsideIt) {
  EXPECT_TRUE(prompt_opens_reasoning(ReasoningSyntax::kThinkTags, "<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningSyntax::kThinkTags,
                                      "<|im_start|>assistant\n<think>\n\n</think>\n\n"));  // enable_thinking false
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningSyntax::kNone, "<think>\n"));
  expect_split("\nI should add.\n</think>\n\n2 + 2 = 4", ReasoningSyntax::kThinkTags, true, "I should add.",
               "2 + 2 = 4");
}

TEST(ReasoningParserTest, ReasoningCutShortOrNeverClosedStaysReasoning) {
  // max_tokens ended it inside the reasoning: no content, nothing lost.
  expect_split("<think>Let me think about th", ReasoningSyntax::kThinkTags, false, "Let me think about th", "");
  expect_split("still thinking </thi", ReasoningSyntax::kThinkTags, true, "still thinking </thi", "");
  expect_split("<think>", ReasoningSyntax::kThinkTags, false, "", "");
}

TEST(ReasoningParserTest, UnderAGrammarAnOpenedReasoningCountsOnlyOnceClosed) {
  // The prompt opened <think>, but a JSON schema wrote the output: it is the answer.
  ReasoningParser json(ReasoningSyntax::kThinkTags, true, false, true);
  EXPECT_EQ(json.push("{\"a\": ").content, "");  // held: a </think> may still come
  ReasoningPieces tail = json.finish();
  EXPECT_EQ(tail.content, "{\"a\": ");
  EXPECT_EQ(tail.reasoning, "");
  // A grammar that writes the reasoning and its close.
  for (size_t step : {size_t(1), size_t(4), size_t(100)}) {
    ReasoningParser p(ReasoningSyntax::kThinkTags, true, false, true);
    ReasoningPieces all;
    const std::string text = "\nhm ok\n</think>\n\n{}";
    for (size_t i = 0; i < text.size(); i += step) {
      ReasoningPieces piece = p.push(std::string_view(text).substr(i, step));
      all.reasoning += piece.reasoning;
      all.content += piece.content;
    }
    all.content += p.finish().content;
    EXPECT_EQ(all.reasoning, "hm ok");
    EXPECT_EQ(all.content, "{}");
  }
}

TEST(ReasoningParserTest, LongOutputsPushedByteByByteStayLinear) {
  // A grammar's output held whole (it may still close the reasoning), then closed.
  const std::string long_text(200000, 'x');
  ReasoningParser undecided(ReasoningSyntax::kThinkTags, true, false, true);
  for (char c : long_text) EXPECT_TRUE(undecided.push(std::string_view(&c, 1)).content.empty());
  const ReasoningPieces closed = undecided.push("</think>ok");
  EXPECT_EQ(closed.reasoning, long_text);
  EXPECT_EQ(closed.content, "ok");
  // A harmony "header" that never ends is no header: the answer, streamed from then on.
  ReasoningParser harmony(ReasoningSyntax::kHarmony, false);
  std::string content = harmony.push("<|channel|>").content;
  for (char c : long_text) content += harmony.push(std::string_view(&c, 1)).content;
  content += harmony.finish().content;
  EXPECT_EQ(content, "<|channel|>" + long_text);
}

TEST(ReasoningParserTest, NothingHeldLongerThanAMarkerCouldNeed) {
  ReasoningParser parser(ReasoningSyntax::kThinkTags, false);
  EXPECT_EQ(parser.push("<think>").reasoning, "");
  EXPECT_EQ(parser.push("abc").reasoning, "abc");
  ReasoningPieces p = parser.push(" d </");  // the space before a possible </think> waits with it
  EXPECT_EQ(p.reasoning, " d");
  p = parser.push("think>");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_TRUE(p.content.empty());
  EXPECT_FALSE(parser.in_reasoning());
  EXPECT_EQ(parser.push(" answer").content, "answer");
}

TEST(ReasoningParserTest, HarmonyAnalysisIsReasoningAndFinalIsContent) {
  const std::string text =
      "<|channel|>analysis<|message|>User says hi. Reply kindly.<|end|><|start|>assistant<|channel|>final"
      "<|message|>Hi there!<|return|>";
  expect_split(text, ReasoningSyntax::kHarmony, false, "User says hi. Reply kindly.", "Hi there!");
  // <|return|> is an end-of-generation token: the text usually ends without it.
  expect_split(text.substr(0, text.size() - 10), ReasoningSyntax::kHarmony, false, "User says hi. Reply kindly.",
               "Hi there!");
  // A prompt ending in the analysis header.
  EXPECT_TRUE(prompt_opens_reasoning(ReasoningSyntax::kHarmony, "<|start|>assistant<|channel|>analysis<|message|>"));
  expect_split("think<|end|><|start|>assistant<|channel|>final<|message|>ok", ReasoningSyntax::kHarmony, true,
               "think", "ok");
  // A model that ignores the format: its text is the answer.
  expect_split("Once upon a time", ReasoningSyntax::kHarmony, false, "", "Once upon a time");
}

TEST(ReasoningParserTest, HarmonyCommentaryCallsBecomeToolCalls) {
  const std::string text =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";
  for (size_t step : {size_t(1), size_t(4), text.size()}) {
    const ReasoningPieces p = stream(text, ReasoningSyntax::kHarmony, false, step);
    EXPECT_EQ(p.reasoning, "Need weather.");
    EXPECT_EQ(p.content, "");
    ASSERT_EQ(p.calls.size(), 1u) << step;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_TRUE(p.calls[0].id.empty()) << "the server names calls";
  }
  // The recipient in the role part, and the call ending with the output (<|call|> ends generation, no text).
  const ReasoningPieces p = parse_reasoning(
      "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{\"zone\": \"UTC\"} ",
      ReasoningSyntax::kHarmony, false);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_time");
  EXPECT_EQ(p.calls[0].arguments, "{\"zone\": \"UTC\"}");
  // Without tools, a call's text stays content.
  const ReasoningPieces no_tools = stream(text, ReasoningSyntax::kHarmony, false, 3, false);
  EXPECT_TRUE(no_tools.calls.empty());
  EXPECT_EQ(no_tools.content, "{\"city\":\"Paris\"}");
}

TEST(ReasoningParserTest, ThinkThenQwenCallsParseIntoToolCalls) {
  // Qwen3.5's XML-ish call and Qwen3's JSON call, after a reasoning: the answer part goes to the tool-call parser.
  const std::string xml =
      "<think>\nWeather needed.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
      "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  const ReasoningPieces split = stream(xml, ReasoningSyntax::kThinkTags, false, 3);
  EXPECT_EQ(split.reasoning, "Weather needed.");
  const ToolCallParser::Result calls = parse_tool_calls(split.content, ToolCallFormat::kHermes);
  ASSERT_EQ(calls.calls.size(), 1u);
  EXPECT_EQ(calls.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(calls.calls[0].arguments), nlohmann::json({{"city", "Paris"}, {"days", 3}}));
  EXPECT_EQ(calls.content, "");

  const ReasoningPieces json_split = parse_reasoning(
      "Weather.</think><tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
      ReasoningSyntax::kThinkTags, true);
  EXPECT_EQ(json_split.reasoning, "Weather.");
  const ToolCallParser::Result json_calls = parse_tool_calls(json_split.content, ToolCallFormat::kHermes);
  ASSERT_EQ(json_calls.calls.size(), 1u);
  EXPECT_EQ(json_calls.calls[0].name, "get_time");
}

TEST(ReasoningParserTest, SyntaxFromTemplateAndFormat) {
  EXPECT_EQ(reasoning_syntax_of_template("{{ '<|start|>assistant<|channel|>final<|message|>' }}"),
            ReasoningSyntax::kHarmony);
  EXPECT_EQ(reasoning_syntax_of_template("{{ '<|im_start|>assistant\\n<think>\\n' }}"), ReasoningSyntax::kThinkTags);
  EXPECT_EQ(reasoning_syntax_of_template("{{ '<|im_start|>assistant\\n' }}"), ReasoningSyntax::kNone);
  EXPECT_EQ(reasoning_syntax_for(ReasoningFormat::kAuto, ReasoningSyntax::kNone), ReasoningSyntax::kNone);
  EXPECT_EQ(reasoning_syntax_for(ReasoningFormat::kDeepseek, ReasoningSyntax::kNone), ReasoningSyntax::kThinkTags);
  EXPECT_EQ(reasoning_syntax_for(ReasoningFormat::kDeepseek, ReasoningSyntax::kHarmony), ReasoningSyntax::kHarmony);
  EXPECT_EQ(reasoning_syntax_for(ReasoningFormat::kNone, ReasoningSyntax::kThinkTags), ReasoningSyntax::kNone);
  for (const char* name : {"auto", "none", "deepseek"})
    EXPECT_EQ(reasoning_format_name(*parse_reasoning_format(name)), name);
  EXPECT_FALSE(parse_reasoning_format("deepseek-legacy"));
}

}  // namespace
}  // namespace pagoda
