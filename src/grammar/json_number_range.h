// JSON numbers inside numeric bounds, as digit-level grammar expressions (the approach of llama.cpp's
// json-schema-to-grammar): an integer in [lo, hi] is a choice, per digit count, of digit-by-digit ranges, and a
// fraction between two decimal fractions is a digit-by-digit range too, so bounds are enforced exactly with no
// arithmetic at run time.
//
//   integers: canonical decimal (no leading zeros, no "-0"); a non-integral bound is rounded inward; without an
//             upper (lower) bound at most kMaxFreeDigits digits.
//   numbers:  any decimal bound (its shortest decimal spelling); a bounded number is written without an exponent,
//             with at most 15 significant digits (integer and fraction digits together), so that a JSON parser's
//             double keeps it on the right side of the bound (15 digits survive the trip through a double).
//   Integer bounds may be any value a signed 64-bit integer holds (a double's rounding is monotonic, so an integer
//   within them parses to a double within them); number bounds must lie within +-1e15 (15 significant digits). A
//   bound past those on its own side (a maximum from 1e15 up, past 2^63 for integers) is met by every number the
//   grammar writes and so bounds nothing; one past them on the other side is refused.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>

#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

inline constexpr int32_t kMaxFreeDigits = 15;

struct NumberBound {
  double value = 0;
  bool exclusive = false;
};

Result<GrammarBuilder::Expr> json_integer_in_range(GrammarBuilder& b, std::optional<NumberBound> lo,
                                                   std::optional<NumberBound> hi);
Result<GrammarBuilder::Expr> json_number_in_range(GrammarBuilder& b, std::optional<NumberBound> lo,
                                                  std::optional<NumberBound> hi);
// Canonical non-negative integers in [lo, hi] (hi: nullopt = up to max_digits digits).
GrammarBuilder::Expr decimal_range(GrammarBuilder& b, uint64_t lo, std::optional<uint64_t> hi, int32_t max_digits);

}  // namespace pagoda::grammar
