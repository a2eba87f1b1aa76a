// json_string_chars: one character of a JSON string's content, as the bytes that encode it inside the quotes.
// Characters that JSON requires escaped ('"', '\\', U+0000-U+001F) get their canonical escape (\" \\ \b \f \n \r \t,
// else \u00XX); all others are raw UTF-8. A JSON string built from these pieces decodes to exactly the
// characters chosen, one piece per character, so length limits count pieces.
//
// json_string_any_char: any one character in any valid JSON spelling (raw, every short escape including \/, \uXXXX
// for a non-surrogate, or a surrogate pair \uD8XX\uDCXX): for free-form strings, whose content is unconstrained.
#pragma once

#include "grammar/code_point_set.h"
#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

GrammarBuilder::Expr json_string_chars(GrammarBuilder& b, const CodePointSet& set);
GrammarBuilder::Expr json_string_any_char(GrammarBuilder& b);

}  // namespace pagoda::grammar
