// Tool definitions and tool-call parsing (src/chat/tool_definitions.h, tool_call_parser.h): each format's calls
// are found whole and when the output arrives a byte at a time, the content before a call streams at once,
// text that only looked like a call's start comes back as content, the forcing schema's shape, and tool calls in
// the messages a template renders.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/tool_call_parser.h"
#include "chat/tool_definitions.h"

namespace pagoda {
namespace {

// Feeds `text` one byte at a time: the content streamed before finish(), and the result.
std::pair<std::string, ToolCallParser::Result> stream_bytes(std::string_view text, ToolCallFormat format) {
  ToolCallParser parser(format);
  std::string streamed;
  for (char c : text) streamed += parser.push(std::string_view(&c, 1));
  return {streamed, parser.finish()};
}

TEST(ToolCallParserTest, HermesCallsAfterContentWholeAndByteByByte) {
  const std::string text =
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  const ToolCallParser::Result whole = parse_tool_calls(text, ToolCallFormat::kHermes);
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.content, "Let me look.\n");
  EXPECT_EQ(whole.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(whole.calls[0].arguments), nlohmann::json({{"city", "Paris"}}));
  EXPECT_EQ(whole.calls[1].name, "get_time");
  EXPECT_EQ(whole.calls[1].arguments, "{}");
  EXPECT_TRUE(whole.calls[0].id.empty() && whole.calls[1].id.empty()) << "the server names calls, not the parser";
  const auto [streamed, result] = stream_bytes(text, ToolCallFormat::kHermes);
  EXPECT_EQ(streamed, "Let me look.\n") << "the content streams before the call, and nothing of the call";
  EXPECT_EQ(result.calls.size(), 2u);
  EXPECT_EQ(result.content, "");
}

// Qwen3.5's (and Qwen3-Coder's) XML-ish call inside <tool_call>: a parameter's value that reads as JSON (a number,
// an object) is that value, any other its text without the template's newline on each side.
TEST(ToolCallParserTest, Qwen35XmlCallsWholeAndByteByByte) {
  const std::string text =
      "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco, CA\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=options>\n{\"units\": \"metric\"}\n</parameter>\n</function>\n"
      "</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>";
  const ToolCallParser::Result whole = parse_tool_calls(text, ToolCallFormat::kHermes);
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.content, "Checking.\n");
  EXPECT_EQ(whole.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(whole.calls[0].arguments),
            nlohmann::json({{"city", "San Francisco, CA"}, {"days", 3}, {"options", {{"units", "metric"}}}}));
  EXPECT_EQ(whole.calls[1].name, "get_time");
  EXPECT_EQ(whole.calls[1].arguments, "{}");
  const auto [streamed, result] = stream_bytes(text, ToolCallFormat::kHermes);
  EXPECT_EQ(streamed, "Checking.\n");
  ASSERT_EQ(result.calls.size(), 2u);
  EXPECT_EQ(result.calls[0].arguments, whole.calls[0].arguments);
  // A function tag with no name is no call: the text comes back.
  const std::string nameless = "<tool_call>\n<function=>\n</function>\n</tool_call>";
  const ToolCallParser::Result none = parse_tool_calls(nameless, ToolCallFormat::kHermes);
  EXPECT_TRUE(none.calls.empty());
  EXPECT_EQ(none.content, nameless);
}

TEST(ToolCallParserTest, TextThatIsNoCallComesBackAsContent) {
  // A marker's prefix that goes on as text, and a marker followed by no valid call.
  for (const std::string& text : {std::string("a <tool_ca b"), std::string("x <tool_call>{\"nam\": 1}"),
                                  std::string("<tool_call>not json</tool_call>")}) {
    const auto [streamed, result] = stream_bytes(text, ToolCallFormat::kHermes);
    EXPECT_TRUE(result.calls.empty()) << text;
    EXPECT_EQ(streamed + result.content, text);
  }
  // A missing close tag at the end is still a call (the output ended there).
  EXPECT_EQ(
      parse_tool_calls("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}", ToolCallFormat::kHermes).calls.size(),
      1u);
}

TEST(ToolCallParserTest, MistralLlama3AndTheForcedArray) {
  auto m = parse_tool_calls(
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}}, {\"name\": \"g\", "
      "\"arguments\": {}}]",
      ToolCallFormat::kMistral);
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].name, "g");
  auto l =
      parse_tool_calls(" {\"name\": \"f\", \"parameters\": {\"q\": \"a;b\"}}; {\"name\": \"g\", \"parameters\": {}}",
                       ToolCallFormat::kLlama3Json);
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(l.calls[0].arguments)["q"], "a;b");
  EXPECT_EQ(l.content, "");
  auto tag = parse_tool_calls("<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tag.calls.size(), 1u);
  // Llama 3: an output that starts as text is content, streamed at once.
  const auto [streamed, plain] = stream_bytes("The answer is {1}.", ToolCallFormat::kLlama3Json);
  EXPECT_EQ(streamed, "The answer is {1}.");
  EXPECT_TRUE(plain.calls.empty());
  auto arr = parse_tool_calls("[{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}]", ToolCallFormat::kJsonArray);
  ASSERT_EQ(arr.calls.size(), 1u);
  EXPECT_EQ(arr.calls[0].arguments, "{\"a\":[1,2]}");
}

// tool_choice "required" cut by max_tokens: the complete calls come back as calls, the cut one with its name and
// its arguments so far (OpenAI's shape for a call cut by length), never the array's text as content.
TEST(ToolCallParserTest, AForcedCallArrayCutShortKeepsItsCallsAndTheCutOne) {
  const std::string whole = R"([{"name":"f","arguments":{"a":1}},{"name":"get_weather","arguments":{"city":"Par)";
  auto cut = parse_tool_calls(whole, ToolCallFormat::kJsonArray);
  ASSERT_EQ(cut.calls.size(), 2u);
  EXPECT_EQ(cut.calls[0].name, "f");
  EXPECT_EQ(cut.calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(cut.calls[1].name, "get_weather");
  EXPECT_EQ(cut.calls[1].arguments, R"({"city":"Par)");
  EXPECT_EQ(cut.content, "");
  // Every prefix: complete calls in order, never content, at most one call more than the complete ones.
  for (size_t n = 0; n <= whole.size(); ++n) {
    auto p = parse_tool_calls(whole.substr(0, n), ToolCallFormat::kJsonArray);
    EXPECT_EQ(p.content, "") << n;
    const size_t complete = n >= 34 ? 1 : 0;  // the first call's closing brace is the 34th byte
    EXPECT_GE(p.calls.size(), complete) << n;
    EXPECT_LE(p.calls.size(), complete + 1) << n;
    if (!p.calls.empty()) EXPECT_EQ(p.calls[0].name, "f") << n;
  }
  // Cut inside the second call's name: only the first comes back.
  auto in_name = parse_tool_calls(R"([{"name":"f","arguments":{}},{"name":"get_w)", ToolCallFormat::kJsonArray);
  ASSERT_EQ(in_name.calls.size(), 1u);
  EXPECT_EQ(in_name.calls[0].arguments, "{}");
  // A name with an escaped quote, cut just after it.
  auto escaped = parse_tool_calls(R"([{"name":"a\"b","arguments")", ToolCallFormat::kJsonArray);
  ASSERT_EQ(escaped.calls.size(), 1u);
  EXPECT_EQ(escaped.calls[0].name, "a\"b");
  EXPECT_EQ(escaped.calls[0].arguments, "");
}

TEST(ToolCallParserTest, FormatFromTheTemplate) {
  EXPECT_EQ(tool_call_format_of_template("{{ '<tool_call>' }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_of_template("[TOOL_CALLS] {{ x }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format_of_template("<|start_header_id|>{% if tools %}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format_of_template("{{ messages }}"), ToolCallFormat::kHermes);
  // --tool-call-parser's names and back.
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kMistral, ToolCallFormat::kLlama3Json})
    EXPECT_EQ(parse_tool_call_format(tool_call_format_name(f)), f);
  EXPECT_EQ(parse_tool_call_format("pythonic"), std::nullopt);
}

TEST(ToolDefinitionsTest, RequiredSchemaAndDefaultPrompt) {
  std::vector<ToolFunction> tools = {
      {"f", "does f", {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}}},
      {"g", "", {{"type", "object"}}}};
  const nlohmann::ordered_json one = required_tool_calls_schema(tools, false);
  EXPECT_EQ(one["type"], "array");
  EXPECT_EQ(one["minItems"], 1);
  EXPECT_EQ(one["maxItems"], 1);
  ASSERT_EQ(one["items"]["anyOf"].size(), 2u);
  EXPECT_EQ(one["items"]["anyOf"][0]["properties"]["name"]["const"], "f");
  EXPECT_EQ(one["items"]["anyOf"][1]["properties"]["arguments"], tools[1].parameters);
  EXPECT_FALSE(required_tool_calls_schema(tools, true).contains("maxItems"));
  const std::string prompt = default_tool_prompt(tools);
  EXPECT_NE(prompt.find("<tools>"), std::string::npos);
  EXPECT_NE(prompt.find("\"name\":\"f\""), std::string::npos);
  EXPECT_NE(prompt.find("<tool_call>"), std::string::npos);
  EXPECT_EQ(tools_json(tools)[0]["function"]["description"], "does f");
  EXPECT_FALSE(tools_json(tools)[1]["function"].contains("description"));
}

// A parameters schema without `type` admits any JSON value; a call's arguments are an object all the same.
TEST(ToolDefinitionsTest, ArgumentsAreAnObjectWhenTheParametersDoNotSayTheType) {
  ToolFunction untyped{"g", "", nlohmann::ordered_json::parse(R"({"properties":{"x":{"type":"integer"}},"required":["x"]})")};
  const nlohmann::ordered_json args = arguments_schema(untyped);
  EXPECT_EQ(args["type"], "object");
  EXPECT_EQ(args["properties"], untyped.parameters["properties"]);
  EXPECT_EQ(args["required"], untyped.parameters["required"]);
  EXPECT_EQ(required_tool_calls_schema(std::vector<ToolFunction>{untyped}, true)["items"]["properties"]["arguments"],
            args);
  ToolFunction typed{"h", "", nlohmann::ordered_json::parse(R"({"type":["object","null"]})")};
  EXPECT_EQ(arguments_schema(typed), typed.parameters);  // what a schema says of its type stands
}

TEST(ToolDefinitionsTest, TemplatesRenderToolCallsAndToolResults) {
  std::vector<ChatMessage> messages = {{"user", "weather?", {}, {}, {}},
                                       {"assistant", "", {{"call_1", "get_weather", "{\"city\":\"Oslo\"}"}}, {}, {}},
                                       {"tool", "rainy", {}, "call_1", "get_weather"}};
  // A built-in format writes the calls in Hermes' format.
  const std::string chatml = ChatTemplate(ChatFormat::kChatml).render(messages, true);
  EXPECT_NE(chatml.find("<|im_start|>assistant\n<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":"
                        "\"Oslo\"}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << chatml;
  EXPECT_NE(chatml.find("<|im_start|>tool\nrainy<|im_end|>"), std::string::npos) << chatml;
  // A Jinja template sees tool_calls (arguments as a mapping), tool_call_id and the tools.
  auto t = ChatTemplate::from_jinja(
      "{% for m in messages %}{{ m.role }}:{% if m.tool_calls %}{% for c in m.tool_calls %}{{ c.function.name }}("
      "{{ c.function.arguments.city }}){% endfor %}{% endif %}{% if m.tool_call_id %}[{{ m.tool_call_id }}]{% endif "
      "%}{{ m.content }};{% endfor %}{% for t in tools %}{{ t.function.name }}{% endfor %}",
      "<s>", "</s>");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(t->renders_tools());
  EXPECT_FALSE(ChatTemplate(ChatFormat::kChatml).renders_tools());
  nlohmann::ordered_json extra = {{"tools", tools_json(std::vector<ToolFunction>{{"get_weather", "", {}}})}};
  auto text = t->try_render(messages, false, extra);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(*text, "user:weather?;assistant:get_weather(Oslo);tool:[call_1]rainy;get_weather");
}

}  // namespace
}  // namespace pagoda
