// The render budget (JinjaLimits' steps, bytes built, value and evaluation depth) and the stop hook: every real
// chat template renders a long conversation well inside the defaults, and hostile templates and contexts (the
// ones issue 23 found, and their relatives) end with kLimitExceeded or kCancelled instead of running for ever,
// growing until std::bad_alloc or overflowing the stack.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/jinja_budget.h"
#include "chat/jinja_template.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

std::string real_template_text(const std::string& name) {
  std::ifstream in(std::string(PAGODA_CHAT_TEMPLATES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Status render_status(std::string_view source, const Json& context = Json::object(), const JinjaOptions& options = {},
                     const JinjaShouldStop& should_stop = {}) {
  Result<JinjaTemplate> t = JinjaTemplate::parse(source, options);
  if (!t.ok()) return t.status();
  Result<std::string> out = t->render(context, should_stop);
  return out.ok() ? Status() : out.status();
}

// The limits a test shrinks to keep hostile renders quick under ASan (the defaults are 32 times these); the
// mechanism is the same at any size.
JinjaOptions small_budget() {
  JinjaOptions o;
  o.limits.max_steps = 300'000;
  o.limits.max_total_bytes = int64_t(8) << 20;
  o.limits.max_output_bytes = int64_t(1) << 20;
  return o;
}

// The default budget's headroom: each real template renders 3000 messages (and the tool templates a tool list)
// within a quarter of the default steps and bytes. Measured use at 4000 messages of ~200 bytes: 80k-200k steps
// (of 10M) and 18-41 MB built (of 256 MiB): at most ~50 steps per message and ~50 bytes built per byte of
// conversation, so the defaults hold conversations of about 5 MB of text (1M+ tokens) with the costliest template.
TEST(JinjaBudgetTest, RealTemplatesRenderLongConversationsWithinAQuarterOfTheDefaults) {
  std::vector<ChatMessage> chat = {{"system", "You are a helpful assistant."}};
  for (int32_t i = 0; i < 3000; ++i)
    chat.push_back(
        {i % 2 ? "assistant" : "user", std::string(200, char('a' + i % 26)) + " message " + std::to_string(i)});
  const Json tools = Json::array({{{"type", "function"},
                                   {"function",
                                    {{"name", "get_weather"},
                                     {"description", "Get the weather"},
                                     {"parameters",
                                      {{"type", "object"},
                                       {"properties", {{"city", {{"type", "string"}, {"description", "City"}}}}},
                                       {"required", {"city"}}}}}}}});
  JinjaOptions quarter;
  quarter.limits.max_steps /= 4;
  quarter.limits.max_total_bytes /= 4;
  for (const char* file :
       {"Llama-2-13b-chat-hf.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "Qwen-Qwen2.5-0.5B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "google-gemma-2-2b-it.jinja",
        "meta-llama-Llama-3.2-3B-Instruct.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistralai-Mixtral-8x7B-Instruct-v0.1.jinja"}) {
    SCOPED_TRACE(file);
    Result<JinjaTemplate> program = JinjaTemplate::parse(real_template_text(file), quarter);
    ASSERT_TRUE(program.ok()) << program.error();
    // Gemma and Mixtral refuse system messages and Llama 2 / Mixtral need alternating turns: each gets the chat
    // its template accepts.
    const bool no_system = std::string_view(file).find("gemma") != std::string_view::npos ||
                           std::string_view(file).find("Mixtral") != std::string_view::npos;
    std::span<const ChatMessage> messages(chat);
    if (no_system) messages = messages.subspan(1);
    const Json extra = std::string_view(file).find("Hermes") != std::string_view::npos ||
                               std::string_view(file).find("Qwen3") != std::string_view::npos
                           ? Json{{"tools", tools}}
                           : Json::object();
    Result<std::string> text = render_jinja_chat(*program, messages, true, "<s>", "</s>", extra);
    ASSERT_TRUE(text.ok()) << text.error();
    EXPECT_GT(text->size(), size_t(3000 * 200));
  }
}

// Issue 23's template: 400,000 iterations of a 15 MB string ran for ever (each value was under the per-value
// limit), ignored the request deadline and survived SIGTERM. The bytes it builds are charged as it goes.
TEST(JinjaBudgetTest, RepeatedLargeValuesExhaustTheBytesBudget) {
  const Status s = render_status("{% for i in range(400000) %}{% set x = 'a' * 15000000 %}{% endfor %}");
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded) << s.message();
  EXPECT_NE(s.message().find("exceeds its budget of 268435456 bytes built"), std::string::npos) << s.message();
}

// Nested doubling of lists and dicts: each step copies the value twice, so memory grew until std::bad_alloc.
TEST(JinjaBudgetTest, NestedDoublingStopsAtTheBytesBudget) {
  for (const char* source :
       {"{% set ns = namespace(x=[1]) %}{% for i in range(100) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}",
        "{% set ns = namespace(x={}) %}{% for i in range(100) %}{% set ns.x = {'a': ns.x, 'b': ns.x} %}{% endfor %}",
        "{% set ns = namespace(x=['ab']) %}{% for i in range(100) %}{% set ns.x = ns.x + ns.x %}{% endfor %}",
        "{% set ns = namespace(x='ab') %}{% for i in range(100) %}{% set ns.x = [ns.x, ns.x]|string %}{% endfor %}"}) {
    SCOPED_TRACE(source);
    const Status s = render_status(source, Json::object(), small_budget());
    EXPECT_EQ(s.code(), StatusCode::kLimitExceeded) << s.message();
  }
}

TEST(JinjaBudgetTest, WorkWithoutAllocationExhaustsTheStepsBudget) {
  // Two calls per level: 2^60 calls within the macro depth bound.
  Status s = render_status(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
      "{{ f(60) }}",
      Json::object(), small_budget());
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded) << s.message();
  EXPECT_NE(s.message().find("exceeds its budget of 300000 steps"), std::string::npos) << s.message();
  s = render_status("{{ range(100000) | unique | length }}", Json::object(), small_budget());  // quadratic
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded) << s.message();
}

// Operations whose cost is far above the size of what they make, each bounded now.
TEST(JinjaBudgetTest, CostlyOperationsFinishOrStop) {
  // Linear string search: std::string::find took ~30 s for a 100 KB periodic needle in 8 MB of text (here 2 MB
  // and 50 KB, ~2.5 s each with std::string::find in a Release build).
  const std::string search =
      "{% set a = 'a' * 2000000 %}{% set b = 'a' * 50000 + 'b' %}"
      "{{ b in a }} {{ a.count(b) }} {{ a.find(b) }} {{ a.replace(b, 'x') | length }} "
      "{{ a.split(b) | length }}";
  Result<JinjaTemplate> t = JinjaTemplate::parse(search);
  ASSERT_TRUE(t.ok());
  Result<std::string> found = t->render(Json::object());
  ASSERT_TRUE(found.ok()) << found.error();
  EXPECT_EQ(*found, "False 0 -1 2000000 1");
  // strip() with a huge character set: a table, not a search of the set per character.
  t = JinjaTemplate::parse("{% set a = 'ab' * 1000000 %}{{ a.strip(a) | length }}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->render(Json::object()), "0");
  // '' * 10**18 looped 10^18 times; 1 ** (2**62) multiplied 2^62 times.
  t = JinjaTemplate::parse(
      "[{{ '' * 1000000000000000000 }}] {{ 1 ** 4611686018427387904 }} {{ (-1) ** 9 }}"
      " {{ 3 ** 5 }}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->render(Json::object()), "[] 1 -1 243");
  EXPECT_NE(render_status("{{ 3 ** 100 }}").message().find("integer overflow"), std::string::npos);
  // Growth by a factor inside one filter stops at the value limit, not after it.
  for (const char* source : {"{{ ('a\\n' * 200000) | indent(256) }}",
                             // 64 copies of a 100-deep list: 41 MB of indentation from a 256 KB value.
                             "{% set ns = namespace(x=1, l=[]) %}{% for i in range(100) %}{% set ns.x = [ns.x] %}"
                             "{% endfor %}{% set ns.l = [ns.x] %}{% for i in range(6) %}{% set ns.l = ns.l + ns.l %}"
                             "{% endfor %}{{ ns.l | tojson(indent=64) }}",
                             "{{ ('a,' * 500000).split(',') | length }}", "{% for c in 'a' * 1000000 %}{% endfor %}"}) {
    SCOPED_TRACE(source);
    const Status s = render_status(source, Json::object(), small_budget());
    EXPECT_EQ(s.code(), StatusCode::kLimitExceeded) << s.message();
  }
}

TEST(JinjaBudgetTest, DeepValuesAndDeepEvaluationAreRefusedBeforeTheStackRunsOut) {
  // A value nested one level per iteration: copies, comparisons and tojson recurse over it.
  Status s = render_status(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x }}");
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded);
  EXPECT_NE(s.message().find("a value nests lists or dicts deeper than 128 levels"), std::string::npos) << s.message();
  // A context nested 100,000 deep (built without recursion) is refused before the renderer copies it.
  Json deep = Json::array();
  for (int32_t i = 0; i < 100000; ++i) deep = Json::array({std::move(deep)});
  s = render_status("{{ x | length }}", Json{{"x", std::move(deep)}});
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded);
  EXPECT_NE(s.message().find("deeper than 128 levels"), std::string::npos) << s.message();
  // The same through render_jinja_chat's extra context (a request's tools, say), which it copies first.
  Json deep_tools = Json::array();
  for (int32_t i = 0; i < 100000; ++i) deep_tools = Json::array({std::move(deep_tools)});
  Result<JinjaTemplate> program = JinjaTemplate::parse("{{ tools | length }}");
  ASSERT_TRUE(program.ok());
  Result<std::string> r = render_jinja_chat(*program, {}, true, "", "", Json{{"tools", std::move(deep_tools)}});
  EXPECT_EQ(r.status().code(), StatusCode::kLimitExceeded);
  EXPECT_NE(r.error().find("the context nests lists or dicts deeper than 128 levels"), std::string::npos) << r.error();
  // Macro recursion (64 levels) times an expression chain (180 levels): 11,500 evaluation levels, each C++ stack
  // frames; the evaluation depth bound (1000) stops it at about 1 MB of stack.
  std::string chain = "f(n - 1)";
  for (int32_t i = 0; i < 180; ++i) chain = "(" + chain + ") | trim";
  s = render_status("{% macro f(n) %}{% if n > 0 %}{{ " + chain + " }}{% endif %}{% endmacro %}{{ f(60) }}");
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded);
  EXPECT_NE(s.message().find("evaluation nested deeper than 1000 levels"), std::string::npos) << s.message();
}

TEST(JinjaBudgetTest, OversizedSourcesAreRefusedAtParse) {
  Result<JinjaTemplate> t = JinjaTemplate::parse(std::string(2 << 20, 'x'));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.error().find("more than the 1048576 a template may have"), std::string::npos) << t.error();
  // 200 KB of "{{ ((((" (the bound is the same for 1 MB): refused by the nesting bound, not by the stack.
  t = JinjaTemplate::parse("{{ " + std::string(200000, '(') + " }}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("nesting deeper than 200 levels"), std::string::npos) << t.error();
}

TEST(JinjaBudgetTest, ContextIntegersBeyondInt64AreErrorsNotWraps) {
  const Status s = render_status("{{ n + 1 }}", Json{{"n", uint64_t(18446744073709551615u)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("integer 18446744073709551615 is too large"), std::string::npos) << s.message();
  EXPECT_NE(render_status("{{ 1e300 | int }}").message().find("cannot convert float"), std::string::npos);
}

// The stop hook: polled as the render goes, so a caller's deadline or shutdown ends even a render that is
// inside its budget; a render asked for after the deadline does not start.
TEST(JinjaBudgetTest, ShouldStopCancelsARender) {
  JinjaOptions unbounded;
  unbounded.limits.max_steps = INT64_MAX;
  unbounded.limits.max_total_bytes = INT64_MAX;
  unbounded.limits.max_loop_iterations = INT64_MAX;
  const std::string forever = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  int64_t num_polls = 0;
  Status s = render_status(forever, Json::object(), unbounded, [&] {
    ++num_polls;
    return std::chrono::steady_clock::now() > deadline;
  });
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.message();
  EXPECT_NE(s.message().find("the render was cancelled"), std::string::npos) << s.message();
  EXPECT_GT(num_polls, 1);

  std::atomic<bool> shutting_down{true};
  s = render_status("{{ 'never' }}", Json::object(), {}, [&] { return shutting_down.load(); });
  EXPECT_EQ(s.code(), StatusCode::kCancelled);

  // Also while building bytes without many steps: each 'a' * 15 MB is one step but 15 MB.
  shutting_down = false;
  int64_t byte_polls = 0;
  s = render_status("{% for i in range(400000) %}{% set x = 'a' * 15000000 %}{% endfor %}", Json::object(), unbounded,
                    [&] { return ++byte_polls > 3; });
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.message();

  // ChatTemplate::try_render passes the hook through.
  Result<ChatTemplate> chat = ChatTemplate::from_jinja(forever, "", "");
  ASSERT_TRUE(chat.ok());
  Result<std::string> r = chat->try_render({}, true, Json::object(), [] { return true; });
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
}

TEST(JinjaBudgetTest, FootprintWalksDeepValuesWithoutRecursionAndStopsEarly) {
  Json deep = Json::array();
  for (int32_t i = 0; i < 200000; ++i) deep = Json::array({std::move(deep)});
  const jinja::JsonFootprint f = jinja::json_footprint(deep, INT64_MAX, 1000);
  EXPECT_EQ(f.depth, 1001);  // stopped one past the bound
  const jinja::JsonFootprint all = jinja::json_footprint(Json{{"ab", "xyz"}, {"n", 1}}, INT64_MAX, 10);
  EXPECT_EQ(all.depth, 1);
  EXPECT_EQ(all.bytes, (16 + 24) + (32 + 2) + (16 + 32 + 3) + (32 + 1) + 16);
  EXPECT_LE(jinja::json_footprint(Json(std::vector<int>(100000, 1)), 1000, 10).bytes, 1000 + 16);
}

}  // namespace
}  // namespace pagoda
