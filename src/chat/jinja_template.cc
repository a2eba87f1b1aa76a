// JinjaTemplate: the two entry points. The stages (jinja_lexer, jinja_parser, jinja_renderer) throw JinjaError
// so that their recursive code stays readable; here every exception becomes a Status and nothing escapes.
#include "chat/jinja_template.h"

#include <exception>
#include <new>
#include <string>

#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_renderer.h"
#include "chat/jinja_syntax.h"

namespace pagoda {

Result<JinjaTemplate> JinjaTemplate::parse(std::string_view source, const JinjaOptions& options) {
  if (int64_t(source.size()) > options.limits.max_source_bytes)
    return make_error("jinja: the template is " + std::to_string(source.size()) + " bytes, more than the " +
                          std::to_string(options.limits.max_source_bytes) + " a template may have",
                      StatusCode::kInvalidArgument);
  try {
    auto program = std::make_shared<jinja::Program>();
    program->body = jinja::parse_tokens(jinja::tokenize(source, options), options.limits.max_nesting_depth);
    program->limits = options.limits;
    return JinjaTemplate(std::move(program));
  } catch (const jinja::JinjaError& e) {
    return make_error(e.message, StatusCode::kInvalidArgument);
  } catch (const std::exception& e) {  // bad_alloc: never past this line
    return make_error(std::string("jinja: ") + e.what(), StatusCode::kInvalidArgument);
  }
}

Result<std::string> JinjaTemplate::render(const nlohmann::ordered_json& context,
                                          const JinjaShouldStop& should_stop) const {
  try {
    return jinja::render_program(*program_, context, should_stop);
  } catch (const jinja::JinjaError& e) {
    return make_error(e.message, e.code);
  } catch (const std::bad_alloc& e) {  // the budget should stop a render long before; never past this line
    return make_error(std::string("jinja: out of memory: ") + e.what(), StatusCode::kLimitExceeded);
  } catch (const std::exception& e) {  // nlohmann::json type errors: never past this line
    return make_error(std::string("jinja: ") + e.what(), StatusCode::kInvalidArgument);
  }
}

}  // namespace pagoda
