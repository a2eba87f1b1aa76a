// JinjaTemplate: a parsed Jinja program (the subset that model chat templates use) and its renderer.
// Owns an immutable syntax tree shared between copies; render() is const and thread-safe.
// Semantics follow Hugging Face transformers' apply_chat_template environment: trim_blocks and lstrip_blocks on,
// undefined variables render as "" and are falsy, attribute access on undefined (or none) is undefined.
// Every failure (syntax, runtime, raise_exception, limits) is a Result error; nothing throws out of this API.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pagoda/status.h"

namespace pagoda {

namespace jinja {
struct Program;
}

// Bounds that keep a hostile template (or context) from exhausting the process: a render is bounded in time
// (steps, bytes built) and in memory (what it holds was built, so max_total_bytes bounds that too) and stack.
// Real chat templates rendering conversations of thousands of messages use a small fraction of each (see
// JinjaBudgetTest in tests/unit/chat/jinja_budget_test.cc for the measured use).
struct JinjaLimits {
  int64_t max_source_bytes = 1 << 20;       // parser: real templates are at most a few tens of KB
  int32_t max_nesting_depth = 200;          // parser: nested blocks and expressions
  int32_t max_call_depth = 64;              // render: macro calls (recursion), each many stack frames deep
  int32_t max_render_depth = 1000;          // render: expressions, blocks and macro calls nested, all together
  int32_t max_value_depth = 128;            // render: lists and dicts inside one another (context included)
  int64_t max_output_bytes = 16 << 20;      // render: the output and any one string or list built
  int64_t max_loop_iterations = 1'000'000;  // render: all loop bodies together
  int64_t max_steps = 10'000'000;           // render: statements, expressions and comparisons, all together
  int64_t max_total_bytes = int64_t(256) << 20;  // render: bytes of every value built or copied, all together
};

// Polled while a render runs (every few thousand steps and every few MB built); returning true stops it with a
// StatusCode::kCancelled error. The server passes one that checks the request's deadline and its shutdown flag.
using JinjaShouldStop = std::function<bool()>;

struct JinjaOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag (as transformers does)
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at the start of a line
  JinjaLimits limits;
};

class JinjaTemplate {
 public:
  // Syntax errors say where: "jinja: line 3, col 7: expected '%}' ...".
  static Result<JinjaTemplate> parse(std::string_view source, const JinjaOptions& options = {});
  // `context` is an object whose keys become the template's variables. Runtime errors name the line
  // (kInvalidArgument); a render past a JinjaLimits bound fails with kLimitExceeded, one stopped by
  // `should_stop` with kCancelled.
  Result<std::string> render(const nlohmann::ordered_json& context, const JinjaShouldStop& should_stop = {}) const;

 private:
  explicit JinjaTemplate(std::shared_ptr<const jinja::Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace pagoda
