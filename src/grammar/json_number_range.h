// JSON numbers inside numeric bounds, as digit-level grammar expressions (the approach of llama.cpp's
// json-schema-to-grammar): an integer in [lo, hi] is a choice, per digit count, of digit-by-digit ranges, so the
// bound is enforced exactly with no arithmetic at run time.
//
//   integers: canonical decimal (no leading zeros, no "-0"); bounds are any values (a non-integral bound is
//             rounded inward); without an upper (lower) bound at most kMaxFreeDigits digits.
//   numbers:  bounds must be integral (a non-integral bound is an error); a bounded number is written without an
//             exponent: integer part in range, then an optional fraction of up to 16 digits, with the boundary
//             values handled exactly (x <= 3 allows 3 and 3.000 but not 3.5; x > 3 allows 3.5 but not 3.0).
//   Bounds must lie within +-1e18.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>

#include "grammar/grammar_builder.h"

namespace pagoda::grammar {

inline constexpr int32_t kMaxFreeDigits = 16;

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
