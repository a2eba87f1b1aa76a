// Jinja parser: tokens -> syntax tree, by recursive descent with Jinja's operator precedence.
#pragma once

#include <cstdint>
#include <vector>

#include "chat/jinja_syntax.h"

namespace pagoda::jinja {

// Throws JinjaError ("jinja: line L, col C: expected ..., found ...") and when blocks, brackets or expression
// trees nest deeper than `max_depth`.
Body parse_tokens(std::vector<Token> tokens, int32_t max_depth);

}  // namespace pagoda::jinja
