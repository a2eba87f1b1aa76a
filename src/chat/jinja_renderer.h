// Jinja renderer: walks a syntax tree over a context and produces the text, within the program's JinjaLimits.
#pragma once

#include <string>

#include "chat/jinja_syntax.h"

namespace pagoda::jinja {

// Throws JinjaError ("jinja: line L: ...") for runtime errors, raise_exception() and exceeded limits, and when
// `should_stop` returns true (polled as the render goes).
std::string render_program(const Program& program, const Json& context, const JinjaShouldStop& should_stop);

}  // namespace pagoda::jinja
