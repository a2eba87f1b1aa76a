// Jinja against hostile data rather than hostile sources (jinja_template_test.cc mutates sources): the real chat
// templates over contexts with every field set to each JSON type, every filter, method, test and operator applied
// to values of every type, and random programs from the expression grammar. Each render returns text or an error
// (a runtime error or the render budget's), never an exception, an abort or (under ASan) a bad access.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/json_mutations.h"
#include "chat/jinja_template.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

std::string chat_template_text(const std::string& name) {
  std::ifstream in(std::string(PAGODA_CHAT_TEMPLATES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Limits a few times what these small renders need, so that a runaway case ends quickly under ASan.
JinjaOptions fuzz_options() {
  JinjaOptions o;
  o.limits.max_steps = 200'000;
  o.limits.max_total_bytes = int64_t(16) << 20;
  o.limits.max_output_bytes = int64_t(1) << 20;
  o.limits.max_loop_iterations = 20'000;
  return o;
}

void expect_clean(const Result<std::string>& r) {
  if (r.ok()) return;
  const StatusCode code = r.status().code();
  EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kLimitExceeded) << r.error();
  EXPECT_EQ(r.error().rfind("jinja: ", 0), 0u) << r.error();
}

TEST(JinjaDataFuzzTest, RealTemplatesOverTypeConfusedContexts) {
  const Json context = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "Hi"}},
        {{"role", "assistant"},
         {"content", "<think>x</think>Yo"},
         {"tool_calls", {{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", {{"a", 1}}}}}}}}},
        {{"role", "tool"}, {"content", "42"}},
        {{"role", "user"}, {"content", "More"}}}},
      {"tools",
       {{{"type", "function"},
         {"function",
          {{"name", "f"},
           {"description", "F"},
           {"parameters",
            {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}}}}}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"date_string", "26 Jul 2024"}};
  for (const char* file :
       {"Llama-2-13b-chat-hf.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "Qwen-Qwen2.5-0.5B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "google-gemma-2-2b-it.jinja",
        "meta-llama-Llama-3.2-3B-Instruct.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistralai-Mixtral-8x7B-Instruct-v0.1.jinja"}) {
    SCOPED_TRACE(file);
    Result<JinjaTemplate> program = JinjaTemplate::parse(chat_template_text(file), fuzz_options());
    ASSERT_TRUE(program.ok()) << program.error();
    // 30 of the context's ~60 values, spread evenly (each with every replacement): a few seconds under ASan.
    testing_support::for_each_type_confusion<Json>(
        context,
        [&](const Json& variant, const std::string& where) {
          SCOPED_TRACE(where);
          expect_clean(program->render(variant));
        },
        30);
  }
}

// One value of each type (and the edge cases), as the template variables v0..vN.
Json value_context() {
  Json context = Json::object();
  std::vector<Json> values = testing_support::type_confused_values<Json>();
  values.push_back("  Hello, World\n  second line\n");
  values.push_back(Json{{"b", 2}, {"a", {{"c", 3}}}});
  values.push_back(Json::array({3, 1, 2, 1}));
  values.push_back(Json::array({Json{{"a", 1}}, Json{{"a", "x"}}, Json::object()}));
  for (size_t i = 0; i < values.size(); ++i) context["v" + std::to_string(i)] = values[i];
  return context;
}

TEST(JinjaDataFuzzTest, EveryFilterMethodTestAndOperatorOnEveryType) {
  const Json context = value_context();
  const size_t num_values = context.size();
  // Arguments: a few values of each kind, plus an undefined name.
  const std::vector<std::string> args = {
      "", "v0", "v4", "v9", "v13", "v15", "v18", std::string("v") + std::to_string(num_values - 1), "nope"};
  const std::vector<std::string> filters = {
      "safe",       "trim",   "string",  "upper",    "lower",   "capitalize", "title",   "length",
      "count",      "tojson", "default", "first",    "last",    "join",       "replace", "int",
      "float",      "abs",    "list",    "items",    "reverse", "unique",     "map",     "selectattr",
      "rejectattr", "select", "reject",  "dictsort", "indent",  "e",          "nosuch"};
  const std::vector<std::string> methods = {
      "strip",   "lstrip", "rstrip", "split", "startswith", "endswith", "upper",  "lower", "capitalize", "title",
      "replace", "find",   "count",  "join",  "items",      "keys",     "values", "get",   "nosuch"};
  const std::vector<std::string> tests = {
      "defined",     "undefined", "none",     "string",   "number",   "integer", "float", "boolean", "true",
      "false",       "mapping",   "iterable", "sequence", "callable", "lower",   "upper", "even",    "odd",
      "divisibleby", "eq",        "ne",       "in",       "lt",       "gt",      "le",    "ge",      "nosuch"};
  const std::vector<std::string> operators = {
      "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "~", "and", "or"};
  std::vector<std::string> sources;
  for (size_t v = 0; v < num_values; ++v) {
    const std::string x = "v" + std::to_string(v);
    for (const std::string& a : args) {
      const std::string call = a.empty() ? "" : "(" + a + ")";
      for (const std::string& f : filters) sources.push_back("{{ " + x + " | " + f + call + " }}");
      for (const std::string& m : methods) sources.push_back("{{ " + x + "." + m + "(" + a + ") }}");
      for (const std::string& t : tests) sources.push_back("{{ " + x + " is " + t + call + " }}");
      if (!a.empty()) {
        for (const std::string& op : operators) sources.push_back("{{ " + x + " " + op + " " + a + " }}");
        sources.push_back("{{ " + x + "[" + a + "] }}{{ " + x + "[" + a + ":] }}{{ " + x + "[::" + a + "] }}");
        sources.push_back("{% for k in " + x + " %}{{ k }}{{ loop.previtem }}{% endfor %}{{ range(" + a + ") }}");
        sources.push_back("{{ " + x + " | map(attribute=" + a + ") | list }}{{ " + x + " | join(" + a +
                          ", attribute='a') }}");
      }
    }
    sources.push_back("{{ -" + x + " }}{{ not " + x + " }}{{ " + x + "|selectattr('a', 'eq', 1)|list }}");
    sources.push_back("{% set ns = namespace(x=" + x + ") %}{% set ns.y = [ns.x, " + x + "] %}{{ ns.y | tojson(2) }}");
    sources.push_back("{{ dict(" + x + ", k=" + x + ") }}{{ namespace(" + x + ") }}{{ strftime_now(" + x + ") }}");
  }
  int num_rendered = 0;
  for (const std::string& source : sources) {
    SCOPED_TRACE(source);
    Result<JinjaTemplate> program = JinjaTemplate::parse(source, fuzz_options());
    ASSERT_TRUE(program.ok()) << program.error();  // every source above is valid syntax
    const Result<std::string> r = program->render(context);
    expect_clean(r);
    num_rendered += r.ok();
  }
  EXPECT_GT(num_rendered, int(sources.size() / 4));
}

// Random programs: statements (for, if, set, macros) around random expressions over the typed values.
class ProgramGenerator {
 public:
  explicit ProgramGenerator(uint32_t seed, size_t num_values) : rng_(seed), num_values_(num_values) {}

  std::string program() {
    std::string out;
    const int num_statements = 1 + int(rng_() % 4);
    for (int i = 0; i < num_statements; ++i) out += statement(3);
    return out;
  }

 private:
  std::string pick(const std::vector<std::string>& options) { return options[rng_() % options.size()]; }
  std::string value() {
    switch (rng_() % 6) {
      case 0: return "v" + std::to_string(rng_() % num_values_);
      case 1: return std::to_string(int(rng_() % 7) - 2);
      case 2: return pick({"'ab'", "''", "'x y'", "\"\\n\"", "'<s>'"});
      case 3: return pick({"none", "true", "false", "[]", "{}", "1.5", "loop", "ns", "nope"});
      case 4: return pick({"i", "k", "ns.x", "m()"});
      default: return "v" + std::to_string(rng_() % num_values_);
    }
  }
  // Compound expressions come parenthesized, so that any of them can be an operand, a filter's input or an index.
  std::string expression(int depth) {
    if (depth <= 0) return value();
    return "(" + compound(depth) + ")";
  }
  std::string compound(int depth) {
    switch (rng_() % 10) {
      case 0:
        return "(" + expression(depth - 1) + " " +
               pick({"+", "-", "*", "//", "%", "==", "in", "~", "and", "or", "<", "**"}) + " " + expression(depth - 1) +
               ")";
      case 1:
        return expression(depth - 1) + " | " +
               pick({"length", "first", "last", "list", "reverse", "tojson", "trim", "items", "join(',')", "unique",
                     "map('upper')", "dictsort", "indent(2)", "default(1)", "int", "string"});
      case 2:
        return expression(depth - 1) + "." +
               pick({"split()", "strip()", "upper()", "items()", "keys()", "get('a')", "replace('a', 'b')",
                     "startswith('x')", "a", "role", "content"});
      case 3: return expression(depth - 1) + "[" + expression(depth - 1) + "]";
      case 4: return expression(depth - 1) + "[" + pick({"1:", ":-1", "::-1", "::2"}) + "]";
      case 5: return "[" + expression(depth - 1) + ", " + expression(depth - 1) + "]";
      case 6: return "{'a': " + expression(depth - 1) + ", 'b': " + expression(depth - 1) + "}";
      case 7: return expression(depth - 1) + " if " + expression(depth - 1) + " else " + expression(depth - 1);
      case 8: return expression(depth - 1) + " is " + pick({"defined", "string", "mapping", "none", "iterable"});
      default: return "not " + expression(depth - 1);
    }
  }
  std::string statement(int depth) {
    if (depth <= 0) return "{{ " + expression(2) + " }}";
    switch (rng_() % 6) {
      case 0: return "{% for i in " + expression(2) + " %}" + statement(depth - 1) + "{% endfor %}";
      case 1:
        return "{% if " + expression(2) + " %}" + statement(depth - 1) + "{% else %}" + statement(depth - 1) +
               "{% endif %}";
      case 2: return "{% set ns = namespace(x=" + expression(2) + ") %}{% set ns.x = " + expression(2) + " %}";
      case 3: return "{% macro m(k=1) %}" + statement(depth - 1) + "{% endmacro %}{{ m(" + expression(1) + ") }}";
      case 4: return "{% for k, i in " + expression(1) + " | items %}" + statement(depth - 1) + "{% endfor %}";
      default: return "{{ " + expression(3) + " }}";
    }
  }

  std::mt19937 rng_;
  size_t num_values_;
};

TEST(JinjaDataFuzzTest, RandomProgramsOverTypedValues) {
  const Json context = value_context();
  ProgramGenerator generate(20240611, context.size());
  int num_parsed = 0, num_rendered = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string source = generate.program();
    SCOPED_TRACE(source);
    Result<JinjaTemplate> program = JinjaTemplate::parse(source, fuzz_options());
    if (!program.ok()) continue;
    ++num_parsed;
    const Result<std::string> r = program->render(context);
    expect_clean(r);
    num_rendered += r.ok();
  }
  EXPECT_GT(num_parsed, 1450);  // the generator writes valid syntax; a few tags meet reserved words
  EXPECT_GT(num_rendered, 75);  // most random programs meet a type error; enough run to the end
}

}  // namespace
}  // namespace pagoda
