// json_integer_in_range / json_number_in_range / decimal_range (json_number_range.h).
#include "grammar/json_number_range.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace pagoda::grammar {
namespace {

constexpr double kMaxBound = 1e18;
constexpr int32_t kMaxFractionDigits = 16;

using Expr = GrammarBuilder::Expr;

Expr digit_range(GrammarBuilder& b, char lo, char hi) { return b.byte_range(uint8_t(lo), uint8_t(hi)); }

// Digit strings s of the same length as a and b with a <= s <= b.
Expr same_length_range(GrammarBuilder& b, const std::string& a, const std::string& hi) {
  if (a.empty()) return b.empty();
  if (a == hi) return b.literal(a);
  const size_t n = a.size();
  if (a[0] == hi[0]) return b.sequence({b.literal(a.substr(0, 1)), same_length_range(b, a.substr(1), hi.substr(1))});
  const std::string zeros(n - 1, '0'), nines(n - 1, '9');
  std::vector<Expr> alts;
  char lo_first = a[0], hi_first = hi[0];
  if (a.substr(1) != zeros) {
    alts.push_back(b.sequence({b.literal(a.substr(0, 1)), same_length_range(b, a.substr(1), nines)}));
    ++lo_first;
  }
  const bool hi_full = hi.substr(1) == nines;
  if (!hi_full) --hi_first;
  if (lo_first <= hi_first) alts.push_back(b.sequence({digit_range(b, lo_first, hi_first), b.repeat(digit_range(b, '0', '9'), uint32_t(n - 1), uint32_t(n - 1))}));
  if (!hi_full) alts.push_back(b.sequence({b.literal(hi.substr(0, 1)), same_length_range(b, zeros, hi.substr(1))}));
  return b.choice(std::move(alts));
}

Result<int64_t> checked_integral(double v, const char* what) {
  if (!std::isfinite(v) || std::fabs(v) > kMaxBound) {
    return make_error(fmt::format("{} {} is outside the enforceable range +-1e18", what, v), StatusCode::kInvalidArgument);
  }
  return int64_t(v);
}

// Fractions: any, with a nonzero digit, or all zeros (possibly absent).
Expr fraction_any(GrammarBuilder& b) {
  return b.optional(b.sequence({b.literal("."), b.repeat(digit_range(b, '0', '9'), 1, kMaxFractionDigits)}));
}
Expr fraction_nonzero(GrammarBuilder& b) {
  return b.sequence({b.literal("."), b.repeat(b.literal("0"), 0, kMaxFractionDigits - 1), digit_range(b, '1', '9'),
                     b.repeat(digit_range(b, '0', '9'), 0, kMaxFractionDigits - 1)});
}
Expr fraction_zero(GrammarBuilder& b) {
  return b.optional(b.sequence({b.literal("."), b.repeat(b.literal("0"), 1, kMaxFractionDigits)}));
}

// Magnitudes m = I.F (I canonical) with a <= m (or a < m) and m <= c (or m < c); c nullopt: no upper bound.
Expr magnitude_range(GrammarBuilder& b, uint64_t a, bool a_exclusive, std::optional<uint64_t> c, bool c_exclusive) {
  std::vector<Expr> alts;
  // Interior: I in [a (+1 if exclusive), c - 1], any fraction.
  const uint64_t interior_lo = a_exclusive ? a + 1 : a;
  if (!c) {
    alts.push_back(b.sequence({decimal_range(b, interior_lo, std::nullopt, kMaxFreeDigits), fraction_any(b)}));
  } else if (*c >= 1 && interior_lo <= *c - 1) {
    alts.push_back(b.sequence({decimal_range(b, interior_lo, *c - 1, 0), fraction_any(b)}));
  }
  // I == a with a nonzero fraction, when the lower bound is exclusive (a < m) and m can stay below c.
  if (a_exclusive && (!c || a < *c)) alts.push_back(b.sequence({b.literal(std::to_string(a)), fraction_nonzero(b)}));
  // I == c with a zero fraction: m == c, when allowed.
  if (c && !c_exclusive && (a < *c || (a == *c && !a_exclusive))) {
    alts.push_back(b.sequence({b.literal(std::to_string(*c)), fraction_zero(b)}));
  }
  return b.choice(std::move(alts));
}

}  // namespace

Expr decimal_range(GrammarBuilder& b, uint64_t lo, std::optional<uint64_t> hi, int32_t max_digits) {
  const std::string lo_s = std::to_string(lo);
  const size_t max_len = hi ? std::to_string(*hi).size() : std::max<size_t>(size_t(max_digits), lo_s.size());
  if (hi && *hi < lo) return b.nothing();
  std::vector<Expr> alts;
  for (size_t len = lo_s.size(); len <= max_len; ++len) {
    std::string a = lo_s;
    if (len != lo_s.size()) {
      a.assign(len, '0');
      a[0] = '1';
    }
    const std::string c = hi && len == max_len ? std::to_string(*hi) : std::string(len, '9');
    alts.push_back(same_length_range(b, a, c));
  }
  return b.choice(std::move(alts));
}

Result<Expr> json_integer_in_range(GrammarBuilder& b, std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::optional<int64_t> l, h;
  if (lo) {
    PAGODA_ASSIGN_OR_RETURN(const int64_t v, checked_integral(lo->value, "minimum"));
    (void)v;
    const double r = lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value);
    l = int64_t(r);
  }
  if (hi) {
    PAGODA_ASSIGN_OR_RETURN(const int64_t v, checked_integral(hi->value, "maximum"));
    (void)v;
    const double r = hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value);
    h = int64_t(r);
  }
  std::vector<Expr> alts;
  // Non-negative part: [max(l, 0), h].
  if (!h || *h >= 0) {
    const uint64_t from = l && *l > 0 ? uint64_t(*l) : 0;
    alts.push_back(decimal_range(b, from, h ? std::optional<uint64_t>(uint64_t(*h)) : std::nullopt, kMaxFreeDigits));
  }
  // Negative part: -m with m in [max(-h, 1), -l].
  if (!l || *l < 0) {
    const uint64_t from = h && *h < 0 ? uint64_t(-*h) : 1;
    alts.push_back(b.sequence({b.literal("-"), decimal_range(b, from, l ? std::optional<uint64_t>(uint64_t(-*l)) : std::nullopt,
                                                             kMaxFreeDigits)}));
  }
  return b.choice(std::move(alts));
}

Result<Expr> json_number_in_range(GrammarBuilder& b, std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  for (const auto& [bound, what] : {std::pair{lo, "minimum"}, std::pair{hi, "maximum"}}) {
    if (!bound) continue;
    PAGODA_ASSIGN_OR_RETURN(const int64_t v, checked_integral(bound->value, what));
    if (double(v) != bound->value) {
      return make_error(fmt::format("a non-integral {} ({}) on a number is not supported", what, bound->value),
                        StatusCode::kInvalidArgument);
    }
  }
  std::vector<Expr> alts;
  // x >= 0: magnitude bounds [max(lo, 0), hi].
  if (!hi || hi->value >= 0) {
    const bool lo_positive = lo && lo->value >= 0;
    const uint64_t a = lo_positive ? uint64_t(lo->value) : 0;
    const bool a_excl = lo_positive && lo->exclusive;
    if (!(hi && hi->value == 0 && hi->exclusive)) {
      alts.push_back(magnitude_range(b, a, a_excl, hi ? std::optional<uint64_t>(uint64_t(hi->value)) : std::nullopt,
                                     hi && hi->exclusive));
    }
  }
  // x < 0: x = -m with m > 0 (no "-0"), m >= -hi, m <= -lo.
  if (!lo || lo->value < 0) {
    uint64_t a = 0;
    bool a_excl = true;
    if (hi && hi->value < 0) {
      a = uint64_t(-hi->value);
      a_excl = hi->exclusive;
    }
    std::optional<uint64_t> c;
    bool c_excl = false;
    if (lo) {
      c = uint64_t(-lo->value);
      c_excl = lo->exclusive;
    }
    alts.push_back(b.sequence({b.literal("-"), magnitude_range(b, a, a_excl, c, c_excl)}));
  }
  return b.choice(std::move(alts));
}

}  // namespace pagoda::grammar
