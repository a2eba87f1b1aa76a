// JinjaTemplate: each construct on its own, golden renders of real model chat templates (exact text), and
// hostile sources (truncated, mutated, deeply nested, huge loops) that must fail cleanly.
#include "chat/jinja_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "chat/chat_template.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

std::string render(std::string_view source, const Json& context = Json::object()) {
  Result<JinjaTemplate> t = JinjaTemplate::parse(source);
  if (!t.ok()) return "PARSE ERROR: " + t.error();
  Result<std::string> out = t->render(context);
  if (!out.ok()) return "RENDER ERROR: " + out.error();
  return *out;
}

std::string parse_error(std::string_view source) {
  Result<JinjaTemplate> t = JinjaTemplate::parse(source);
  return t.ok() ? "(parsed)" : t.error();
}

std::string render_error(std::string_view source, const Json& context = Json::object(),
                         const JinjaOptions& options = {}) {
  Result<JinjaTemplate> t = JinjaTemplate::parse(source, options);
  if (!t.ok()) return "PARSE ERROR: " + t.error();
  Result<std::string> out = t->render(context);
  return out.ok() ? "(rendered)" : out.error();
}

TEST(JinjaTemplateTest, TextOutputAndComments) {
  EXPECT_EQ(render("plain text"), "plain text");
  EXPECT_EQ(render("a{{ 'b' }}c{# no #}d"), "abcd");
  EXPECT_EQ(render("{{ x }}", {{"x", "hi"}}), "hi");
  EXPECT_EQ(render("[{{ missing }}]"), "[]");
  EXPECT_EQ(render("{{ 1 }} {{ 2.5 }} {{ 3.0 }} {{ true }} {{ none }} {{ False }}"), "1 2.5 3.0 True None False");
  EXPECT_EQ(render("{{ [1, 'a', none] }} {{ {'k': 'v'} }}"), "[1, 'a', None] {'k': 'v'}");
  EXPECT_EQ(render("{{ \"it's\" }} {{ 'tab\\there\\n' }}|{{ '\\u00e9' }}"), "it's tab\there\n|\xc3\xa9");
}

TEST(JinjaTemplateTest, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b\n{%- endif %}"), "ab");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the indent before one goes.
  EXPECT_EQ(render("{% if true %}\n  yes\n{% endif %}\nend"), "  yes\nend");
  EXPECT_EQ(render("x\n    {% if true %}y{% endif %}"), "x\ny");
  EXPECT_EQ(render("{% if true %}\n    {% if true %}z{% endif %}\n{% endif %}"), "z");
  EXPECT_EQ(render("{{ 'a' }}  {% if true %}b{% endif %}"), "a  b");  // not at the start of a line
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}"), "a\nb");                  // not after expressions
  EXPECT_EQ(render("{# c #}\nz"), "z");
  EXPECT_EQ(render("a {%+ if true %}b{% endif %}"), "a b");
}

TEST(JinjaTemplateTest, ForLoops) {
  Json ctx = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% endfor %}", ctx), "1a2b3c");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.length }}|{% endfor %}", ctx),
            "033|123|213|");
  EXPECT_EQ(
      render("{% for x in xs %}{% if loop.first %}<{% endif %}{{ x }}{% if loop.last %}>{% endif %}{% endfor %}", ctx),
      "<abc>");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ loop.index }}{{ x }}{% endfor %}", ctx), "1a2c");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      render("{% for x in xs %}{{ loop.previtem is defined }}{{ loop.nextitem | default('-') }};{% endfor %}", ctx),
      "Falseb;Truec;True-;");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"x", 1}, {"y", 2}}}}), "xy");
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 1, -2) %}{{ i }}{% endfor %}"),
            "01253");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx), "a");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", ctx), "ac");
  EXPECT_EQ(
      render("{% for x in xs %}{% for y in [1, 2] %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}", ctx),
      "121122123");
  // A loop variable and a plain set inside a loop do not leak out of it.
  EXPECT_EQ(render("{% set x = 'out' %}{% for x in xs %}{% set y = 1 %}{% endfor %}{{ x }}{{ y }}", ctx), "out");
}

TEST(JinjaTemplateTest, IfAndSet) {
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {{"b", true}}), "B");
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}"), "C");
  EXPECT_EQ(render("{% set x = 'v' %}{% if true %}{% set x = 'w' %}{% endif %}{{ x }}"), "w");
  EXPECT_EQ(render("{% set ns = namespace(found=false, n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}"
                   "{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}"),
            "True 6");
  EXPECT_EQ(render("{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[inner 2]");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }}|{{ 'yes' if not x }}|", {{"x", 0}}), "no|yes|");
}

TEST(JinjaTemplateTest, Expressions) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}"),
            "7 9 3 -4 1 2");
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ -(3) }}"),
            "3.5 1024 2.5 a1None abab -3");
  EXPECT_EQ(render("{{ [1] + [2] }} {{ 'a' + 'b' }}"), "[1, 2] ab");
  EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ [1, 2] == [1, 2] }}"),
            "True False True True True True");
  EXPECT_EQ(render("{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ none or 0 }}"), "x y True 0");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'z' not in d }}", {{"d", {{"k", 1}}}}),
            "True True True True");
  EXPECT_EQ(render("{{ m['role'] }} {{ m.role }} {{ m.nope }}|{{ m.nope.deeper }}|{{ none.x }}|",
                   {{"m", {{"role", "user"}}}}),
            "user user |||");
  EXPECT_EQ(render("{{ xs[0] }}{{ xs[-1] }}{{ xs[1:] }}{{ xs[:1] }}{{ xs[::-1] }}{{ xs[5] }}{{ 'hello'[1:3] }}"
                   "{{ 'abc'[::-1] }}{{ xs.0 }}",
                   {{"xs", {1, 2, 3}}}),
            "13[2, 3][1][3, 2, 1]elcba1");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [2]}['b'][0] }} {{ (1, 2) }}"), "2 [1, 2]");
}

TEST(JinjaTemplateTest, Tests) {
  Json ctx = {{"s", "x"}, {"n", 3}, {"f", 1.5}, {"l", {1}}, {"d", {{"a", 1}}}, {"z", nullptr}, {"t", true}};
  EXPECT_EQ(render("{{ s is defined }}{{ q is defined }}{{ q is undefined }}{{ z is none }}{{ s is not none }}", ctx),
            "TrueFalseTrueTrueTrue");
  EXPECT_EQ(render("{{ s is string }}{{ n is number }}{{ f is number }}{{ d is mapping }}{{ l is mapping }}", ctx),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ l is iterable }}{{ s is iterable }}{{ n is iterable }}{{ l is sequence }}", ctx),
            "TrueTrueFalseTrue");
  EXPECT_EQ(render("{{ t is true }}{{ t is false }}{{ n is true }}{{ false is false }}", ctx), "TrueFalseFalseTrue");
  EXPECT_EQ(render("{{ n is odd }}{{ n is even }}{{ 9 is divisibleby(3) }}{{ n is eq 3 }}", ctx), "TrueFalseTrueTrue");
  EXPECT_EQ(render("{{ not s is none }}", ctx), "True");
}

TEST(JinjaTemplateTest, Filters) {
  EXPECT_EQ(render("[{{ '  a b \\n' | trim }}]{{ 'Ab' | upper }}{{ 'Ab' | lower }}{{ 'hello world' | capitalize }}"),
            "[a b]ABabHello world");
  EXPECT_EQ(render("{{ [1, 2, 3] | length }}{{ 'héllo' | length }}{{ {'a': 1} | count }}{{ q | length }}"), "3510");
  EXPECT_EQ(render("{{ q | default('dflt') }} {{ '' | default('e', true) }} {{ 'v' | d('x') }}"), "dflt e v");
  EXPECT_EQ(render("{{ [1, 2] | first }}{{ [1, 2] | last }}{{ 'abc' | first }}{{ ['a', 'b'] | join(', ') }}"),
            "12aa, b");
  EXPECT_EQ(render("{{ 'aXbX' | replace('X', '-') }} {{ 3 | string + '!' }} {{ '42' | int + 1 }} {{ 2.7 | int }}"),
            "a-b- 3! 43 2");
  EXPECT_EQ(render("{{ 'ab' | list }} {{ {'a': 1} | items | list }} {{ '<b>' | safe }} {{ 'ab' | reverse }}"),
            "['a', 'b'] [['a', 1]] <b> ba");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | join(',') }} {{ xs | selectattr('n', 'equalto', 2) | list }}",
                   {{"xs", {{{"n", 1}}, {{"n", 2}}}}}),
            "1,2 [{'n': 2}]");
  EXPECT_EQ(render("{{ x | tojson }}", {{"x", {{"name", "f"}, {"args", {1, 2.5, true, nullptr}}, {"s", "q\"\n"}}}}),
            "{\"name\": \"f\", \"args\": [1, 2.5, true, null], \"s\": \"q\\\"\\n\"}");
  EXPECT_EQ(render("{{ x | tojson(indent=2) }}", {{"x", {{"a", {1, 2}}, {"b", Json::object()}}}}),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}");
  EXPECT_EQ(render("{{ 'é' | tojson }}"), "\"\xc3\xa9\"");  // ensure_ascii=False, as transformers' tojson
}

TEST(JinjaTemplateTest, StringAndDictMethods) {
  EXPECT_EQ(render("[{{ '  x  '.strip() }}][{{ '\\nx\\n'.lstrip('\\n') }}][{{ 'x..'.rstrip('.') }}]"), "[x][x\n][x]");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a</think>b'.split('</think>')[-1] }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] b");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith('x') }}"),
            "TrueTrueFalse");
  EXPECT_EQ(render("{{ 'aB'.upper() }}{{ 'aB'.lower() }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'hi you'.title() }}"),
            "ABabbbaHi You");
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 7) }} {{ d.keys() | list }} {{ d.values() }}",
                   {{"d", {{"a", 1}}}}),
            "1 None 7 ['a'] [1]");
}

TEST(JinjaTemplateTest, FeaturesRealTemplatesUse) {
  // {% generation %} (transformers' assistant-mask marker) renders its body; {% filter %} filters a block's text.
  EXPECT_EQ(render("a{% generation %}b{{ 1 + 1 }}{% endgeneration %}c"), "ab2c");
  EXPECT_EQ(render("{% filter upper %}hi {{ x }}{% endfilter %}!", {{"x", "you"}}), "HI YOU!");
  EXPECT_EQ(render("{% filter replace('a', 'o') %}banana{% endfilter %}"), "bonono");
  // Integer dict keys: looked up, iterated and sorted as integers, printed as Python does, dumped as JSON text.
  const char* table = "{% set t = {4096: 512, 8: 1, 'k': 2} %}";
  EXPECT_EQ(render(std::string(table) + "{{ t[4096] }} {{ t['k'] }} {{ t['4096'] is defined }} {{ 8 in t }}"),
            "512 2 False True");
  EXPECT_EQ(render(std::string(table) + "{% for k, v in t | dictsort %}{{ k + 0 if k is integer else k }}={{ v }};"
                                        "{% endfor %}"),
            "8=1;4096=512;k=2;");
  EXPECT_EQ(render(std::string(table) + "{{ t }} {{ t | tojson }} {{ t.keys() | list }}"),
            "{4096: 512, 8: 1, 'k': 2} {\"4096\": 512, \"8\": 1, \"k\": 2} [4096, 8, 'k']");
  // jinja2's select/reject/map family yields nothing for none.
  EXPECT_EQ(render("{{ none | selectattr('type', 'equalto', 'x') | list | length }}"
                   "{{ none | map(attribute='a') | list }}"),
            "0[]");
  // min and max, case-insensitive for strings, by attribute.
  EXPECT_EQ(render("{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['b', 'A', 'c'] | min }} {{ [] | max }}."),
            "1 3 A .");
  EXPECT_EQ(render("{{ (xs | max(attribute='n')).name }}", {{"xs", Json::parse(R"([{"n":1,"name":"a"},{"n":5,"name":"b"}])")}}),
            "b");
  // str.format: positional, numbered and named fields, braces escaped.
  EXPECT_EQ(render("{{ '<{}|{0}|{x}>{{}}'.format('a', x='b') }}"), "<a|a|b>{}");
  EXPECT_NE(render_error("{{ '{:>5}'.format(1) }}").find("only {}, {N} and {name}"), std::string::npos);
  EXPECT_NE(render_error("{{ '{} {}'.format(1) }}").find("no argument for {}"), std::string::npos);
  // escape escapes (markupsafe's five) even without autoescape; safe does not.
  EXPECT_EQ(render("{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }}"), "&lt;a href=&#34;x&#34;&gt;&amp;&#39; <b>");
}

TEST(JinjaTemplateTest, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Bo') }} {{ greet('Al', punct='?') }}"),
            "Hi Bo! Hi Al?");
}

TEST(JinjaTemplateTest, RaiseExceptionIsAnError) {
  std::string error = render_error("line one\n{{ raise_exception('roles must alternate') }}");
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_NE(error.find("roles must alternate"), std::string::npos) << error;
}

TEST(JinjaTemplateTest, SyntaxErrorsSayWhere) {
  EXPECT_EQ(parse_error("ab\ncd {% if x %}"),
            "jinja: line 2, col 14: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(parse_error("{{ 1 + }}"), "jinja: line 1, col 8: expected an expression, found '}}'");
  EXPECT_EQ(parse_error("x\n  {{ 'abc }}"), "jinja: line 2, col 6: unterminated string literal");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "jinja: line 1, col 4: unknown or unsupported tag 'frobnicate'");
  EXPECT_EQ(parse_error("{# open"), "jinja: line 1, col 1: unterminated comment (missing '#}')");
  EXPECT_EQ(parse_error("{{ a "), "jinja: line 1, col 1: unterminated tag (missing '}}')");
  EXPECT_EQ(parse_error("{% endfor %}"), "jinja: line 1, col 4: unknown or unsupported tag 'endfor'");
  EXPECT_EQ(parse_error("{{ a $ b }}"), "jinja: line 1, col 6: unexpected character '$'");
}

TEST(JinjaTemplateTest, RuntimeErrorsAreValues) {
  EXPECT_NE(render_error("{{ 1 + 'a' }}").find("unsupported operand types for +: 'int' and 'str'"), std::string::npos);
  EXPECT_NE(render_error("{{ 1 // 0 }}").find("division or modulo by zero"), std::string::npos);
  EXPECT_NE(render_error("{{ x | nosuchfilter }}").find("unknown filter 'nosuchfilter'"), std::string::npos);
  EXPECT_NE(render_error("{{ 5() }}").find("not callable"), std::string::npos);
  EXPECT_NE(render_error("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
  EXPECT_NE(render_error("{% for a, b in [1] %}{% endfor %}").find("cannot unpack"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------------
// Golden renders of real templates (texts under tests/data/chat_templates; see the README there for sources).

std::string read_template(const std::string& name) {
  std::ifstream in(std::string(PAGODA_CHAT_TEMPLATES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The conversation mistral.rs' and llama.cpp's chat template tests use; the spaces around the second reply
// show which templates strip contents.
const std::vector<ChatMessage> kConversation = {{"system", "You are a helpful assistant"},
                                                {"user", "Hello"},
                                                {"assistant", "Hi there"},
                                                {"user", "Who are you"},
                                                {"assistant", "   I am an assistant   "},
                                                {"user", "Another question"}};

std::string render_chat(const std::string& file, std::span<const ChatMessage> messages, const std::string& bos,
                        const std::string& eos, const Json& extra = Json::object(), bool add_generation_prompt = true) {
  Result<JinjaTemplate> program = JinjaTemplate::parse(read_template(file));
  if (!program.ok()) return "PARSE ERROR: " + program.error();
  Result<std::string> text = render_jinja_chat(*program, messages, add_generation_prompt, bos, eos, extra);
  return text.ok() ? *text : "RENDER ERROR: " + text.error();
}

// Expected text: published by mistral.rs' tests, generated with transformers' apply_chat_template.
TEST(JinjaGoldenTest, Llama2Chat) {
  EXPECT_EQ(render_chat("Llama-2-13b-chat-hf.jinja", kConversation, "<s>", "</s>"),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are "
            "you [/INST] I am an assistant </s><s>[INST] Another question [/INST]");
}

// Expected text: published by mistral.rs' tests (transformers), for the conversation without its system message,
// which this template rejects.
TEST(JinjaGoldenTest, MixtralInstruct) {
  std::vector<ChatMessage> no_system(kConversation.begin() + 1, kConversation.end());
  EXPECT_EQ(render_chat("mistralai-Mixtral-8x7B-Instruct-v0.1.jinja", no_system, "<s>", "</s>"),
            "<s>[INST] Hello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another "
            "question [/INST]");
  std::string error = render_chat("mistralai-Mixtral-8x7B-Instruct-v0.1.jinja", kConversation, "<s>", "</s>");
  EXPECT_NE(error.find("Conversation roles must alternate"), std::string::npos) << error;
}

// Expected text: derived by hand from the template (trim_blocks/lstrip_blocks as in transformers; contents are
// trimmed; date_string passed, as transformers would get it from the caller's kwargs); it matches the system
// block of llama.cpp's expected outputs for this template.
TEST(JinjaGoldenTest, Llama32Instruct) {
  EXPECT_EQ(render_chat("meta-llama-Llama-3.2-3B-Instruct.jinja", kConversation, "<|begin_of_text|>", "<|eot_id|>",
                        {{"date_string", "26 Jul 2024"}}),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>"
            "\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>"
            "user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
            "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Without a system message the block is still there, empty; without date_string, strftime_now supplies today.
  std::string today = render_chat("meta-llama-Llama-3.2-3B-Instruct.jinja", std::vector<ChatMessage>{{"user", "Hi"}},
                                  "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_TRUE(
      today.starts_with("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
                        "Date: December 2023\nToday Date: "))
      << today;
  EXPECT_TRUE(
      today.ends_with("\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\n"))
      << today;
}

// Expected text: derived by hand from the template: no spaces inside [INST], the system prompt joins the last user
// turn, and tools (functions minus "return") go just before it.
TEST(JinjaGoldenTest, MistralNemoInstruct) {
  EXPECT_EQ(render_chat("mistralai-Mistral-Nemo-Instruct-2407.jinja", kConversation, "<s>", "</s>"),
            "<s>[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>[INST]You are a "
            "helpful assistant\n\nAnother question[/INST]");
  Json tools = Json::array(
      {{{"type", "function"},
        {"function", {{"name", "f"}, {"description", "d"}, {"parameters", {{"type", "object"}}}, {"return", 1}}}}});
  EXPECT_EQ(render_chat("mistralai-Mistral-Nemo-Instruct-2407.jinja",
                        std::vector<ChatMessage>{{"user", "A"}, {"assistant", "B"}, {"user", "C"}}, "<s>", "</s>",
                        {{"tools", tools}}),
            "<s>[INST]A[/INST]B</s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"f\", "
            "\"description\": \"d\", \"parameters\": {\"type\": \"object\"}}}][/AVAILABLE_TOOLS][INST]C[/INST]");
  std::string error = render_chat("mistralai-Mistral-Nemo-Instruct-2407.jinja",
                                  std::vector<ChatMessage>{{"user", "A"}, {"user", "B"}}, "<s>", "</s>");
  EXPECT_NE(error.find("conversation roles must alternate"), std::string::npos) << error;
}

// Expected text: derived by hand from the template; the tools go into the first user turn, as 4-space indented
// JSON (json.dumps(indent=4)), the layout llama.cpp's expected outputs for this template show.
TEST(JinjaGoldenTest, Llama32InstructWithTools) {
  Json tools = Json::array(
      {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  EXPECT_EQ(render_chat("meta-llama-Llama-3.2-3B-Instruct.jinja", std::vector<ChatMessage>{{"user", "Hi"}},
                        "<|begin_of_text|>", "<|eot_id|>", {{"date_string", "26 Jul 2024"}, {"tools", tools}}),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge "
            "Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Given the following functions, please respond with a JSON for a function call with its proper arguments "
            "that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": "
            "dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    "
            "\"function\": {\n        \"name\": \"get_weather\",\n        \"parameters\": {\n            \"type\": "
            "\"object\"\n        }\n    }\n}\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

// Expected text: derived by hand (ChatML, contents verbatim); it is what llama.cpp's tests expect of ChatML
// templates for this conversation.
const char kChatmlConversation[] =
    "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>"
    "assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an "
    "assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n";

TEST(JinjaGoldenTest, Qwen25Instruct) {
  EXPECT_EQ(render_chat("Qwen-Qwen2.5-0.5B-Instruct.jinja", kConversation, "", "<|im_end|>"), kChatmlConversation);
  EXPECT_EQ(render_chat("Qwen-Qwen2.5-0.5B-Instruct.jinja", std::vector<ChatMessage>{{"user", "Hi"}}, "", "<|im_end|>"),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // With tools: the system prompt lists them with Python's json.dumps spacing.
  Json tools = Json::array(
      {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  EXPECT_EQ(render_chat("Qwen-Qwen2.5-0.5B-Instruct.jinja", std::vector<ChatMessage>{{"user", "Hi"}}, "", "<|im_end|>",
                        {{"tools", tools}}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\nYou are provided with function "
            "signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_weather\", \"parameters\": {\"type\": \"object\"}}}\n</tools>\n\nFor each function call, return a "
            "json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\n"
            "Hi<|im_end|>\n<|im_start|>assistant\n");
}

// Expected text: derived by hand from the template (namespace, reversed loop, split/lstrip of <think> blocks).
TEST(JinjaGoldenTest, Qwen3) {
  EXPECT_EQ(render_chat("Qwen-Qwen3-0.6B.jinja", kConversation, "", "<|im_end|>"), kChatmlConversation);
  EXPECT_EQ(render_chat("Qwen-Qwen3-0.6B.jinja", std::vector<ChatMessage>{{"user", "Hi"}}, "", "<|im_end|>",
                        {{"enable_thinking", false}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // A reply after the last user turn keeps its reasoning; one before it loses it.
  std::vector<ChatMessage> thought = {{"user", "Hi"}, {"assistant", "<think>\nhmm\n</think>\n\nHello!"}};
  EXPECT_EQ(render_chat("Qwen-Qwen3-0.6B.jinja", thought, "", "<|im_end|>", Json::object(), false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHello!<|im_end|>\n");
  thought.push_back({"user", "Bye"});
  EXPECT_EQ(render_chat("Qwen-Qwen3-0.6B.jinja", thought, "", "<|im_end|>"),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>"
            "\n<|im_start|>assistant\n");
  // The reasoning given back as a field (the server's reasoning_content) renders as the template writes it.
  std::vector<ChatMessage> field = {{"user", "Hi"}, {"assistant", "Hello!"}};
  field[1].reasoning_content = "hmm";
  EXPECT_EQ(render_chat("Qwen-Qwen3-0.6B.jinja", field, "", "<|im_end|>", Json::object(), false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHello!<|im_end|>\n");
}

// Expected text: published by mistral.rs' tests (transformers) for gemma-7b-it, whose template this is too; the
// conversation without its system message, which Gemma rejects.
TEST(JinjaGoldenTest, Gemma2) {
  std::vector<ChatMessage> no_system(kConversation.begin() + 1, kConversation.end());
  EXPECT_EQ(render_chat("google-gemma-2-2b-it.jinja", no_system, "<bos>", "<eos>"),
            "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
            "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n"
            "<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_NE(
      render_chat("google-gemma-2-2b-it.jinja", kConversation, "<bos>", "<eos>").find("System role not supported"),
      std::string::npos);
}

// Expected text: derived by hand from the template: a system turn, <|turn>ROLE ... <turn|> with the assistant as
// "model", contents trimmed, and the generation prompt closing an empty thought channel (thinking off by default).
TEST(JinjaGoldenTest, Gemma4) {
  EXPECT_EQ(render_chat("google-gemma-4-31B-it.jinja", kConversation, "<bos>", "<eos>"),
            "<bos><|turn>system\nYou are a helpful assistant<turn|>\n<|turn>user\nHello<turn|>\n"
            "<|turn>model\nHi there<turn|>\n<|turn>user\nWho are you<turn|>\n<|turn>model\nI am an assistant<turn|>\n"
            "<|turn>user\nAnother question<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
}

// Expected text: derived by hand (contents verbatim, EOS only without a generation prompt).
TEST(JinjaGoldenTest, Phi35Mini) {
  EXPECT_EQ(render_chat("microsoft-Phi-3.5-mini-instruct.jinja", kConversation, "<s>", "<|endoftext|>"),
            "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question"
            "<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render_chat("microsoft-Phi-3.5-mini-instruct.jinja", std::vector<ChatMessage>{{"user", "Hi"}}, "<s>",
                        "<|endoftext|>", Json::object(), false),
            "<|user|>\nHi<|end|>\n<|endoftext|>");
}

// Expected pieces: derived by hand. Exercises a recursive macro (JSON schema -> Python type), `|items` loops and
// loop.previtem / loop.nextitem; the missing newline between "Args" lines is the template's own.
TEST(JinjaGoldenTest, Hermes3ToolUse) {
  Json properties = {{"location", {{"type", "string"}, {"description", "City"}}},
                     {"days", {{"type", {"integer", "number"}}, {"description", " Days "}}}};
  Json tools = Json::array({{{"type", "function"},
                             {"function",
                              {{"name", "get_weather"},
                               {"description", "Get weather"},
                               {"parameters", {{"type", "object"}, {"properties", properties}}}}}}});
  std::vector<ChatMessage> chat = {{"user", "Q"}, {"tool", "r1"}, {"tool", "r2"}};
  std::string text = render_chat("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", chat, "<|begin_of_text|>",
                                 "<|im_end|>", {{"tools", tools}});
  EXPECT_TRUE(text.starts_with("<|begin_of_text|><|im_start|>system\nYou are a function calling AI model.")) << text;
  EXPECT_NE(
      text.find("<tools> {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
                "\"get_weather(location: str, days: Union[int,float]) - Get weather\n\n    Args:\n        "
                "location(str): City        days(Union[int,float]): Days\", \"parameters\": {\"type\": \"object\", "
                "\"properties\": {\"location\": {\"type\": \"string\", \"description\": \"City\"}, \"days\": "
                "{\"type\": [\"integer\", \"number\"], \"description\": \" Days \"}}}} </tools>Use the following"),
      std::string::npos)
      << text;
  EXPECT_TRUE(
      text.ends_with("</tool_call><|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>tool\n<tool_response>\n"
                     "r1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|><|im_start|>assistant\n"))
      << text;
}

// A long chat through the template with the most per-message work (a reversed scan with messages|length in it):
// linear, not a copy of the chat per message.
TEST(JinjaGoldenTest, LongChatRendersInOnePass) {
  std::vector<ChatMessage> chat;
  for (int32_t i = 0; i < 4000; ++i) chat.push_back({i % 2 ? "assistant" : "user", "message " + std::to_string(i)});
  std::string text = render_chat("Qwen-Qwen3-0.6B.jinja", chat, "", "<|im_end|>");
  // The last reply follows the last user turn, so it gets its (empty) reasoning block.
  EXPECT_TRUE(
      text.ends_with("<|im_start|>user\nmessage 3998<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
                     "message 3999<|im_end|>\n<|im_start|>assistant\n"))
      << text.substr(text.size() - std::min<size_t>(text.size(), 200));
}

TEST(JinjaGoldenTest, ChatTemplateFromJinja) {
  Result<ChatTemplate> chat =
      ChatTemplate::from_jinja(read_template("Qwen-Qwen2.5-0.5B-Instruct.jinja"), "", "<|im_end|>");
  ASSERT_TRUE(chat.ok()) << chat.error();
  EXPECT_EQ(chat->format(), ChatFormat::kJinja);
  EXPECT_EQ(chat->render(kConversation, true), kChatmlConversation);
  // The built-in ChatML format and the real template agree.
  EXPECT_EQ(ChatTemplate(ChatFormat::kChatml).render(kConversation, true), kChatmlConversation);

  Result<ChatTemplate> mixtral =
      ChatTemplate::from_jinja(read_template("mistralai-Mixtral-8x7B-Instruct-v0.1.jinja"), "<s>", "</s>");
  ASSERT_TRUE(mixtral.ok());
  Result<std::string> rejected = mixtral->try_render(kConversation, true);
  EXPECT_FALSE(rejected.ok());
  EXPECT_EQ(mixtral->render(kConversation, true), "");

  EXPECT_FALSE(ChatTemplate::from_jinja("{% if %}", "", "").ok());
}

// ---------------------------------------------------------------------------------------------------------------
// Hostile sources

TEST(JinjaFuzzTest, TruncatedRealTemplatesFailCleanly) {
  Json context = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"add_generation_prompt", true}};
  for (const char* file :
       {"meta-llama-Llama-3.2-3B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "Qwen-Qwen2.5-0.5B-Instruct.jinja", "Llama-2-13b-chat-hf.jinja"}) {
    std::string source = read_template(file);
    int32_t num_errors = 0;
    for (size_t len = 0; len < source.size(); ++len) {
      Result<JinjaTemplate> t = JinjaTemplate::parse(std::string_view(source).substr(0, len));
      if (!t.ok()) {
        ++num_errors;
        EXPECT_TRUE(t.error().starts_with("jinja: line ")) << t.error();
        continue;
      }
      (void)t->render(context);  // may succeed or fail; must not crash
    }
    EXPECT_GT(num_errors, static_cast<int32_t>(source.size() / 2)) << file;  // most cuts land inside a tag
  }
}

TEST(JinjaFuzzTest, MutatedSourcesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\"\\.,:|~=!<>*/ \n abcdefxyz0123456789";
  Json context = {{"messages", {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Yo"}}}},
                  {"add_generation_prompt", true}};
  std::vector<std::string> seeds = {read_template("Qwen-Qwen3-0.6B.jinja"),
                                    read_template("meta-llama-Llama-3.2-3B-Instruct.jinja"),
                                    read_template("mistralai-Mixtral-8x7B-Instruct-v0.1.jinja")};
  for (int32_t iter = 0; iter < 3000; ++iter) {
    std::string source = seeds[static_cast<size_t>(iter) % seeds.size()];
    int32_t num_edits = 1 + static_cast<int32_t>(rng() % 4);
    for (int32_t k = 0; k < num_edits; ++k) {
      size_t at = rng() % source.size();
      switch (rng() % 3) {
        case 0: source[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: source.erase(at, 1 + rng() % 8); break;
        default: source.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
      if (source.empty()) source.push_back('{');
    }
    Result<JinjaTemplate> t = JinjaTemplate::parse(source);
    if (t.ok()) (void)t->render(context);
  }
  for (int32_t iter = 0; iter < 3000; ++iter) {  // pure noise
    std::string source;
    size_t len = rng() % 40;
    for (size_t i = 0; i < len; ++i) source += alphabet[rng() % alphabet.size()];
    Result<JinjaTemplate> t = JinjaTemplate::parse(source);
    if (t.ok()) (void)t->render(context);
  }
}

TEST(JinjaFuzzTest, DeepNestingIsBounded) {
  std::string parens = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  EXPECT_NE(parse_error(parens).find("nesting deeper than 200 levels"), std::string::npos);
  std::string nots = "{{ ";
  for (int32_t i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_NE(parse_error(nots + "1 }}").find("nesting deeper"), std::string::npos);
  std::string ifs;
  for (int32_t i = 0; i < 70000; ++i) ifs += "{% if true %}";
  EXPECT_NE(parse_error(ifs).find("nesting deeper"), std::string::npos);
  std::string lists = "{{ " + std::string(100000, '[') + " }}";
  EXPECT_NE(parse_error(lists).find("nesting deeper"), std::string::npos);
  std::string filters = "{{ x";
  for (int32_t i = 0; i < 100000; ++i) filters += "|trim";
  // Chains nest no syntax but build deep trees, which evaluation would recurse over.
  EXPECT_NE(parse_error(filters + " }}").find("expression nesting deeper"), std::string::npos);
  std::string sums = "{{ 1";
  for (int32_t i = 0; i < 100000; ++i) sums += " + 1";
  EXPECT_NE(parse_error(sums + " }}").find("expression nesting deeper"), std::string::npos);
  EXPECT_EQ(render(filters.substr(0, 4 + 5 * 100) + " }}", {{"x", " a "}}), "a");
  EXPECT_NE(render_error("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("macro calls nested deeper"),
            std::string::npos);
  EXPECT_EQ(render("{{ " + std::string(150, '(') + "7" + std::string(150, ')') + " }}"), "7");
}

TEST(JinjaFuzzTest, HugeLoopsAndOutputsAreBounded) {
  EXPECT_NE(render_error("{% for i in range(100000000000) %}{% endfor %}").find("loop iterations"), std::string::npos);
  // A billion iterations: stopped by the loop bound or the render budget, whichever comes first.
  const std::string nested = render_error(
      "{% for a in range(1000) %}{% for b in range(1000) %}"
      "{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}");
  EXPECT_TRUE(nested.find("loop iterations") != std::string::npos || nested.find("budget") != std::string::npos)
      << nested;
  EXPECT_NE(render_error("{{ 'x' * 100000000000 }}").find("exceeds"), std::string::npos);
  JinjaOptions small;
  small.limits.max_output_bytes = 1000;
  EXPECT_NE(render_error("{% for i in range(1000) %}0123456789{% endfor %}", Json::object(), small)
                .find("output exceeds 1000 bytes"),
            std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}"
                         "{% endfor %}")
                .find("exceeds"),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda
