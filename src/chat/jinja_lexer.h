// Jinja lexer: template source -> tokens, with whitespace control (-, +, trim_blocks, lstrip_blocks) already
// applied to the text between tags and comments dropped.
#pragma once

#include <string_view>
#include <vector>

#include "chat/jinja_syntax.h"

namespace pagoda::jinja {

// Throws JinjaError ("jinja: line L, col C: unterminated string literal").
std::vector<Token> tokenize(std::string_view source, const JinjaOptions& options);

}  // namespace pagoda::jinja
