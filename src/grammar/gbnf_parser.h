// parse_gbnf: llama.cpp's GBNF text (its `grammar` request field, --grammar-file) -> Grammar. Supported, as in
// llama.cpp's grammars/README.md: rules `name ::= ...` (names of letters, digits and '-'), `root` as the start,
// alternation `|`, grouping `( )`, string literals "..." and character classes [...] / [^...] over code points
// with ranges and the escapes \x.. \u.... \U........ \t \r \n \\ \" \[ \] \-, `.` (any code point), repetition
// `*` `+` `?` `{m}` `{m,}` `{m,n}`, `#` comments, newlines inside parentheses and after `|`.
// Refused with an error naming it: token references (<[id]>, <text>, !<...>), undefined or twice-defined rules,
// left recursion, a grammar that matches nothing, repetition counts above 10000, nesting deeper than 256.
#pragma once

#include <pagoda/status.h>

#include <string_view>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

Result<Grammar> parse_gbnf(std::string_view text, const BuildLimits& limits = {});

}  // namespace pagoda::grammar
