// JinjaTemplate: a parsed Jinja program (the subset that model chat templates use) and its renderer.
// Owns an immutable syntax tree shared between copies; render() is const and thread-safe.
// Semantics follow Hugging Face transformers' apply_chat_template environment: trim_blocks and lstrip_blocks on,
// undefined variables render as "" and are falsy, attribute access on undefined (or none) is undefined.
// Every failure (syntax, runtime, raise_exception, limits) is a Result error; nothing throws out of this API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pagoda/status.h"

namespace pagoda {

namespace jinja {
struct Program;
}

// Bounds that keep a hostile template from exhausting the process.
struct JinjaLimits {
  int32_t max_nesting_depth = 200;          // parser: nested blocks and expressions
  int32_t max_call_depth = 64;              // render: macro calls (recursion), each many stack frames deep
  int64_t max_output_bytes = 16 << 20;      // render: the output and any one string or list built
  int64_t max_loop_iterations = 1'000'000;  // render: all loop bodies together
};

struct JinjaOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag (as transformers does)
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at the start of a line
  JinjaLimits limits;
};

class JinjaTemplate {
 public:
  // Syntax errors say where: "jinja: line 3, col 7: expected '%}' ...".
  static Result<JinjaTemplate> parse(std::string_view source, const JinjaOptions& options = {});
  // `context` is an object whose keys become the template's variables. Runtime errors name the line.
  Result<std::string> render(const nlohmann::ordered_json& context) const;

 private:
  explicit JinjaTemplate(std::shared_ptr<const jinja::Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace pagoda
