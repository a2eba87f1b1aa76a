// Regular expressions -> grammar expressions: vLLM's `guided_regex` (the whole output matches) and JSON Schema's
// string `pattern` (ECMA-262 search semantics: the string contains a match, so an end without its anchor matches
// anything there; characters are written as JSON string content, see json_string_chars.h).
//
// Supported (ECMA-262 syntax): literals, `.` (any character but \n \r U+2028 U+2029), classes [...] [^...] with
// ranges and escapes, \d \D \w \W \s \S, \t \n \r \f \v \0 \xHH \uHHHH \u{H...} \cX, escaped punctuation, groups
// ( ) (?: ) (?<name> ) (?P<name> ), alternation, * + ? {n} {n,} {n,m} and their lazy forms (same language),
// `^` at the start and `$` at the end of a top-level alternative (a group that is a whole top-level alternative is
// its alternatives: `^$|(^a+$)`), lookaheads (?=X) (?!X) among a top-level alternative's items (the rest of the input
// from there intersected with X.*, or with X.* removed: zod's email; X alone where X ends with `$`).
// Refused with an error naming the construct: backreferences, lookaheads inside groups, lookbehind, word
// boundaries, anchors elsewhere, Unicode property escapes, inline flags, POSIX classes, unknown escapes, nesting
// deeper than 256, repetition counts above 10000.
#pragma once

#include <pagoda/status.h>

#include <string_view>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

enum class RegexMode {
  kFullMatch,         // guided_regex: the output is one match; characters are UTF-8
  kJsonStringSearch,  // JSON Schema pattern: the string content contains a match; characters JSON-encoded
};

Result<GrammarBuilder::Expr> regex_to_expr(std::string_view pattern, RegexMode mode, GrammarBuilder& builder);
// The grammar of outputs that match `pattern` as a whole (guided_regex).
Result<Grammar> parse_regex(std::string_view pattern, const BuildLimits& limits = {});

}  // namespace pagoda::grammar
