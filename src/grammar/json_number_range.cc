// json_integer_in_range / json_number_in_range / decimal_range (json_number_range.h).
#include "grammar/json_number_range.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace pagoda::grammar {
namespace {

constexpr double kMaxBound = 1e15;
constexpr size_t kMaxSignificantDigits = 15;

using Expr = GrammarBuilder::Expr;

Expr digit_range(GrammarBuilder& b, char lo, char hi) { return b.byte_range(uint8_t(lo), uint8_t(hi)); }

// Digit strings s of the same length as a and hi with a <= s <= hi.
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
  if (lo_first <= hi_first) {
    alts.push_back(b.sequence(
        {digit_range(b, lo_first, hi_first), b.repeat(digit_range(b, '0', '9'), uint32_t(n - 1), uint32_t(n - 1))}));
  }
  if (!hi_full) alts.push_back(b.sequence({b.literal(hi.substr(0, 1)), same_length_range(b, zeros, hi.substr(1))}));
  return b.choice(std::move(alts));
}

// decimal_range with, after each integer, what may follow an integer of that many digits.
Expr decimal_range_then(GrammarBuilder& b, uint64_t lo, std::optional<uint64_t> hi, int32_t max_digits,
                        const std::function<Expr(size_t)>& then) {
  if (hi && *hi < lo) return b.nothing();
  const std::string lo_s = std::to_string(lo);
  const size_t max_len = hi ? std::to_string(*hi).size() : std::max<size_t>(size_t(max_digits), lo_s.size());
  std::vector<Expr> alts;
  for (size_t len = lo_s.size(); len <= max_len; ++len) {
    std::string a = lo_s;
    if (len != lo_s.size()) {
      a.assign(len, '0');
      a[0] = '1';
    }
    const std::string c = hi && len == max_len ? std::to_string(*hi) : std::string(len, '9');
    alts.push_back(b.sequence({same_length_range(b, a, c), then(len)}));
  }
  return b.choice(std::move(alts));
}

Status check_bound(double v, const char* what) {
  if (!std::isfinite(v) || std::fabs(v) >= kMaxBound) {
    return make_error(fmt::format("{} {} is outside the enforceable range (-1e15, 1e15)", what, v),
                      StatusCode::kInvalidArgument);
  }
  return Status();
}

// Integer bounds are enforced digit by digit on 64-bit values: anything a signed 64-bit integer holds (zod 4 writes
// +-(2^53 - 1) for every .int()). Rounding a JSON integer to a double never moves it past a bound it meets, since
// rounding is monotonic.
constexpr double kMaxIntegerBound = 9223372036854775808.0;  // 2^63, excluded

Status check_integer_bound(double v, const char* what) {
  if (!std::isfinite(v) || std::fabs(v) >= kMaxIntegerBound) {
    return make_error(fmt::format("{} {} is outside the enforceable range of integers (-2^63, 2^63)", what, v),
                      StatusCode::kInvalidArgument);
  }
  return Status();
}

// The least integer >= the bound (> it when exclusive); the greatest <= (<) for an upper bound. In integers: at
// these magnitudes a double cannot hold bound + 1.
int64_t integer_lower_bound(const NumberBound& lo) {
  const int64_t floor = int64_t(std::floor(lo.value));
  return lo.exclusive || double(floor) != lo.value ? floor + 1 : floor;
}
int64_t integer_upper_bound(const NumberBound& hi) {
  const int64_t ceil = int64_t(std::ceil(hi.value));
  return hi.exclusive || double(ceil) != hi.value ? ceil - 1 : ceil;
}

// A non-negative decimal: integer part and fraction digits (no trailing zeros).
struct Decimal {
  uint64_t integer = 0;
  std::string fraction;
};

// |v| as the decimal of its shortest spelling ("0.1", not 0.1000000000000000055...).
Decimal decimal_of(double v) {
  std::string s = fmt::format("{}", std::fabs(v));
  int32_t exponent = 0;
  if (const size_t e = s.find_first_of("eE"); e != std::string::npos) {
    exponent = std::stoi(s.substr(e + 1));
    s = s.substr(0, e);
  }
  std::string digits = s;
  int32_t point = int32_t(s.size());
  if (const size_t dot = s.find('.'); dot != std::string::npos) {
    digits = s.substr(0, dot) + s.substr(dot + 1);
    point = int32_t(dot);
  }
  point += exponent;
  while (point <= 0) {
    digits.insert(digits.begin(), '0');
    ++point;
  }
  while (int32_t(digits.size()) < point) digits += '0';
  Decimal d;
  d.integer = std::stoull(digits.substr(0, size_t(point)));
  d.fraction = digits.substr(size_t(point));
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  return d;
}

// Fraction digit strings f (up to max_len digits; none = 0) with lo <= f <= hi as decimal fractions, each bound
// optional and possibly exclusive. Returns the fraction part of a number: "" or "." followed by digits.
class FractionRange {
 public:
  FractionRange(GrammarBuilder& b, std::optional<std::string> lo, bool lo_excl, std::optional<std::string> hi,
                bool hi_excl, size_t max_len)
      : b_(b), lo_(std::move(lo)), hi_(std::move(hi)), lo_excl_(lo_excl), hi_excl_(hi_excl), max_len_(max_len) {}

  Expr build() {
    std::vector<Expr> alts;
    if (end_ok(0, lo_.has_value(), hi_.has_value())) alts.push_back(b_.empty());
    const Expr digits = digits_from(0, lo_.has_value(), hi_.has_value());
    alts.push_back(b_.sequence({b_.literal("."), digits}));
    return b_.choice(std::move(alts));
  }

 private:
  static char digit_at(const std::string& s, size_t i) { return i < s.size() ? s[i] : '0'; }
  static bool rest_zero(const std::string& s, size_t i) { return i >= s.size(); }  // no trailing zeros stored

  // The digits may stop at position i (the rest read as zeros).
  bool end_ok(size_t i, bool tight_lo, bool tight_hi) const {
    if (tight_lo && !(rest_zero(*lo_, i) && !lo_excl_)) return false;  // zeros < lo's rest, or equal but exclusive
    if (tight_hi && rest_zero(*hi_, i) && hi_excl_) return false;      // equal to an exclusive upper bound
    return true;
  }

  // At least one more digit at position i, then whatever may follow.
  Expr digits_from(size_t i, bool tight_lo, bool tight_hi) {
    if (i >= max_len_) return b_.nothing();
    std::vector<Expr> alts;
    const char lo_d = tight_lo ? digit_at(*lo_, i) : '0';
    const char hi_d = tight_hi ? digit_at(*hi_, i) : '9';
    // Digits strictly inside (lo_d, hi_d) free both bounds; lo_d and hi_d keep one (or both, when equal).
    auto after = [&](bool tl, bool th) {
      std::vector<Expr> next;
      if (end_ok(i + 1, tl, th)) next.push_back(b_.empty());
      if (!tl && !th) {
        next.push_back(b_.repeat(digit_range(b_, '0', '9'), 1, uint32_t(max_len_ - i - 1)));
      } else {
        next.push_back(digits_from(i + 1, tl, th));
      }
      return b_.choice(std::move(next));
    };
    if (lo_d > hi_d) return b_.nothing();
    if (lo_d == hi_d) return b_.sequence({b_.literal(std::string(1, lo_d)), after(tight_lo, tight_hi)});
    alts.push_back(b_.sequence({b_.literal(std::string(1, lo_d)), after(tight_lo, false)}));
    if (lo_d + 1 <= hi_d - 1)
      alts.push_back(b_.sequence({digit_range(b_, char(lo_d + 1), char(hi_d - 1)), after(false, false)}));
    alts.push_back(b_.sequence({b_.literal(std::string(1, hi_d)), after(false, tight_hi)}));
    return b_.choice(std::move(alts));
  }

  GrammarBuilder& b_;
  std::optional<std::string> lo_, hi_;
  bool lo_excl_, hi_excl_;
  size_t max_len_;
};

size_t fraction_room(size_t integer_digits) {
  return integer_digits >= kMaxSignificantDigits ? 0 : kMaxSignificantDigits - integer_digits;
}

// Magnitudes m = I.F with a <= m (a < m when a_excl) and m <= c (m < c); either bound may be absent.
Expr magnitude_range(GrammarBuilder& b, std::optional<Decimal> a, bool a_excl, std::optional<Decimal> c, bool c_excl) {
  std::vector<Expr> alts;
  // Integers strictly between the bounds' integer parts take any fraction.
  uint64_t interior_lo = 0;
  if (a) interior_lo = a->integer + ((a->fraction.empty() && !a_excl) ? 0 : 1);
  std::optional<uint64_t> interior_hi;
  bool interior_empty = false;
  if (c) {
    if (c->integer == 0) {
      interior_empty = true;
    } else {
      interior_hi = c->integer - 1;
    }
  }
  if (!interior_empty && (!interior_hi || interior_lo <= *interior_hi)) {
    alts.push_back(decimal_range_then(b, interior_lo, interior_hi, kMaxFreeDigits, [&](size_t len) {
      return FractionRange(b, std::nullopt, false, std::nullopt, false, fraction_room(len)).build();
    }));
  }
  const bool a_boundary = a && !(a->fraction.empty() && !a_excl);  // I == a's integer needs a fraction check
  if (a && c && a->integer == c->integer) {
    const size_t room = fraction_room(std::to_string(a->integer).size());
    alts.push_back(b.sequence({b.literal(std::to_string(a->integer)),
                               FractionRange(b, a->fraction, a_excl, c->fraction, c_excl, room).build()}));
    return b.choice(std::move(alts));
  }
  if (a_boundary && (!c || a->integer < c->integer)) {
    const size_t room = fraction_room(std::to_string(a->integer).size());
    alts.push_back(b.sequence({b.literal(std::to_string(a->integer)),
                               FractionRange(b, a->fraction, a_excl, std::nullopt, false, room).build()}));
  }
  if (c && (!a || c->integer > a->integer)) {
    const size_t room = fraction_room(std::to_string(c->integer).size());
    alts.push_back(b.sequence({b.literal(std::to_string(c->integer)),
                               FractionRange(b, std::nullopt, false, c->fraction, c_excl, room).build()}));
  }
  return b.choice(std::move(alts));
}

}  // namespace

Expr decimal_range(GrammarBuilder& b, uint64_t lo, std::optional<uint64_t> hi, int32_t max_digits) {
  return decimal_range_then(b, lo, hi, max_digits, [&](size_t) { return b.empty(); });
}

Result<Expr> json_integer_in_range(GrammarBuilder& b, std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::optional<int64_t> l, h;
  // A bound past every 64-bit integer on its own side (at 2^63 only when inclusive: an integer rounds to a double
  // up to 2^63) holds for every integer written: the range is int64's on that side.
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (lo && std::isfinite(lo->value) &&
      (lo->value < -kMaxIntegerBound || (lo->value == -kMaxIntegerBound && !lo->exclusive))) {
    l = -kInt64Max;
  } else if (lo) {
    PAGODA_RETURN_IF_ERROR(check_integer_bound(lo->value, "minimum"));
    l = integer_lower_bound(*lo);
  }
  if (hi && std::isfinite(hi->value) &&
      (hi->value > kMaxIntegerBound || (hi->value == kMaxIntegerBound && !hi->exclusive))) {
    h = kInt64Max;
  } else if (hi) {
    PAGODA_RETURN_IF_ERROR(check_integer_bound(hi->value, "maximum"));
    h = integer_upper_bound(*hi);
  }
  if (l && h && *l > *h) return b.nothing();
  std::vector<Expr> alts;
  if (!h || *h >= 0) {  // non-negative part: [max(l, 0), h]
    const uint64_t from = l && *l > 0 ? uint64_t(*l) : 0;
    alts.push_back(decimal_range(b, from, h ? std::optional<uint64_t>(uint64_t(*h)) : std::nullopt, kMaxFreeDigits));
  }
  if (!l || *l < 0) {  // negative part: -m with m in [max(-h, 1), -l]
    const uint64_t from = h && *h < 0 ? uint64_t(-*h) : 1;
    alts.push_back(
        b.sequence({b.literal("-"), decimal_range(b, from, l ? std::optional<uint64_t>(uint64_t(-*l)) : std::nullopt,
                                                  kMaxFreeDigits)}));
  }
  return b.choice(std::move(alts));
}

Result<Expr> json_number_in_range(GrammarBuilder& b, std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  // A bound at or past 1e15 on its own side holds for every number written here (under 1e15 in magnitude).
  if (hi && std::isfinite(hi->value) && hi->value >= kMaxBound) hi.reset();
  if (lo && std::isfinite(lo->value) && lo->value <= -kMaxBound) lo.reset();
  if (lo) PAGODA_RETURN_IF_ERROR(check_bound(lo->value, "minimum"));
  if (hi) PAGODA_RETURN_IF_ERROR(check_bound(hi->value, "maximum"));
  std::vector<Expr> alts;
  // x >= 0: magnitudes from max(lo, 0) to hi.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    std::optional<Decimal> a;
    bool a_excl = false;
    if (lo && lo->value >= 0) {
      a = decimal_of(lo->value);
      a_excl = lo->exclusive;
    }
    std::optional<Decimal> c;
    if (hi) c = decimal_of(hi->value);
    alts.push_back(magnitude_range(b, a, a_excl, c, hi && hi->exclusive));
  }
  // x < 0: x = -m with m > 0 (no "-0"), m >= -hi when hi < 0, m <= -lo.
  if (!lo || lo->value < 0) {
    Decimal a;  // 0, exclusive
    bool a_excl = true;
    if (hi && hi->value < 0) {
      a = decimal_of(hi->value);
      a_excl = hi->exclusive;
    }
    std::optional<Decimal> c;
    bool c_excl = false;
    if (lo) {
      c = decimal_of(lo->value);
      c_excl = lo->exclusive;
    }
    alts.push_back(b.sequence({b.literal("-"), magnitude_range(b, a, a_excl, c, c_excl)}));
  }
  return b.choice(std::move(alts));
}

}  // namespace pagoda::grammar
