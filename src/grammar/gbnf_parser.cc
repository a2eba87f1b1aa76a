// parse_gbnf (gbnf_parser.h): a recursive-descent parser writing into a GrammarBuilder. Errors carry the line and
// column ("gbnf: line 3, column 9: expecting '::='").
#include "grammar/gbnf_parser.h"

#include <fmt/format.h>

#include <optional>

namespace pagoda::grammar {
namespace {

constexpr int32_t kMaxNesting = 256;
constexpr uint64_t kMaxRepetition = 10000;

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Result<Grammar> parse(const BuildLimits& limits) {
    skip_space(true);
    while (!failed_ && pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    if (failed_) return make_error(error_, StatusCode::kInvalidArgument);
    for (int32_t r = 0; r < b_.num_rules(); ++r) {
      if (!b_.has_body(r)) {
        return make_error(fmt::format("gbnf: rule '{}' is used but never defined", b_.rule_name(r)),
                          StatusCode::kInvalidArgument);
      }
    }
    const std::optional<int32_t> root = b_.find_rule("root");
    if (!root) return make_error("gbnf: the grammar has no 'root' rule", StatusCode::kInvalidArgument);
    Result<Grammar> g = b_.build(*root, limits);
    if (!g.ok()) return make_error("gbnf: " + g.error(), g.status().code());
    return g;
  }

 private:
  using Expr = GrammarBuilder::Expr;

  void fail(std::string message) {
    if (failed_) return;
    failed_ = true;
    int32_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = fmt::format("gbnf: line {}, column {}: {}", line, col, message);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  static bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\r' && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_word(peek())) ++pos_;
    if (pos_ == start) fail("expecting a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  int32_t rule_id(const std::string& name) {
    if (std::optional<int32_t> id = b_.find_rule(name)) return *id;
    return b_.add_rule(name);
  }

  void parse_rule() {
    const std::string name = parse_name();
    if (failed_) return;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return fail("expecting '::='");
    pos_ += 3;
    skip_space(true);
    const int32_t id = rule_id(name);
    if (b_.has_body(id)) return fail(fmt::format("rule '{}' is defined twice", name));
    const Expr body = parse_alternates(false, 0);
    if (failed_) return;
    b_.set_body(id, body);
    if (peek() == '\r') {
      pos_ += peek(1) == '\n' ? 2 : 1;
    } else if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      fail(fmt::format("unexpected '{}'", peek()));
    }
  }

  Expr parse_alternates(bool nested, int32_t depth) {
    std::vector<Expr> alts{parse_sequence(nested, depth)};
    while (!failed_ && peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested, depth));
    }
    return b_.choice(std::move(alts));
  }

  // One code point of a literal or class, with its escapes; advances.
  uint32_t parse_char() {
    if (at_end()) {
      fail("unexpected end of input");
      return 0;
    }
    if (peek() == '\\') {
      const char e = peek(1);
      auto hex = [&](int32_t n) -> uint32_t {
        uint32_t v = 0;
        for (int32_t i = 0; i < n; ++i) {
          const char c = peek(size_t(2 + i));
          int32_t d = (c >= '0' && c <= '9')   ? c - '0'
                      : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                      : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                               : -1;
          if (d < 0) {
            fail(fmt::format("expecting {} hex digits after \\{}", n, e));
            return 0;
          }
          v = v * 16 + uint32_t(d);
        }
        pos_ += size_t(2 + n);
        if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF))
          fail(fmt::format("\\{} escape is not a Unicode scalar value", e));
        return v;
      };
      switch (e) {
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        case 't': pos_ += 2; return '\t';
        case 'r': pos_ += 2; return '\r';
        case 'n': pos_ += 2; return '\n';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-': pos_ += 2; return uint32_t(e);
        default: fail(fmt::format("unknown escape '\\{}'", e == '\0' ? ' ' : e)); return 0;
      }
    }
    const std::string rest(text_.substr(pos_, 4));
    size_t n = 0;
    uint32_t cp = 0;
    if (!decode_utf8(rest, n, cp)) {
      fail("invalid UTF-8");
      return 0;
    }
    pos_ += n;
    return cp;
  }

  Expr parse_sequence(bool nested, int32_t depth) {
    std::vector<Expr> items;
    while (!failed_ && !at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        std::string bytes;
        while (!failed_ && peek() != '"') {
          if (at_end()) return fail("unterminated string literal"), b_.empty();
          append_utf8(parse_char(), bytes);
        }
        ++pos_;
        items.push_back(b_.literal(bytes));
      } else if (c == '[') {
        ++pos_;
        bool negated = false;
        if (peek() == '^') {
          negated = true;
          ++pos_;
        }
        CodePointSet set;
        while (!failed_ && peek() != ']') {
          if (at_end()) return fail("unterminated character class"), b_.empty();
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail("character range is out of order");
          }
          set.add(lo, hi);
        }
        ++pos_;
        items.push_back(b_.code_points(negated ? set.complement() : set));
      } else if (c == '<' || c == '!') {
        return fail("token references (<[id]>, <text>, !<...>) are not supported"), b_.empty();
      } else if (is_word(c)) {
        items.push_back(b_.rule_ref(rule_id(parse_name())));
      } else if (c == '(') {
        if (depth >= kMaxNesting)
          return fail(fmt::format("parentheses nested deeper than {}", kMaxNesting)), b_.empty();
        ++pos_;
        skip_space(true);
        const Expr inner = parse_alternates(true, depth + 1);
        if (failed_) return b_.empty();
        if (peek() != ')') return fail("expecting ')'"), b_.empty();
        ++pos_;
        items.push_back(inner);
      } else if (c == '.') {
        ++pos_;
        items.push_back(b_.code_points(CodePointSet::all()));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) return fail(fmt::format("'{}' has nothing to repeat", c)), b_.empty();
        uint64_t min = 0, max = kUnbounded;
        ++pos_;
        if (c == '+') {
          min = 1;
        } else if (c == '?') {
          max = 1;
        } else if (c == '{') {
          skip_space(nested);
          min = parse_int();
          skip_space(nested);
          if (peek() == '}') {
            max = min;
          } else if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            if (peek() >= '0' && peek() <= '9') {
              max = parse_int();
              skip_space(nested);
            }
          } else {
            return fail("expecting ',' or '}' in a repetition"), b_.empty();
          }
          if (peek() != '}') return fail("expecting '}'"), b_.empty();
          ++pos_;
          if (failed_) return b_.empty();
          if (min > kMaxRepetition || (max != kUnbounded && max > kMaxRepetition)) {
            return fail(fmt::format("repetition count above {}", kMaxRepetition)), b_.empty();
          }
          if (max != kUnbounded && max < min) return fail("repetition maximum below its minimum"), b_.empty();
        }
        items.back() = b_.repeat(items.back(), uint32_t(min), uint32_t(max));
      } else {
        break;
      }
      skip_space(nested);
    }
    return b_.sequence(std::move(items));
  }

  uint64_t parse_int() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = std::min<uint64_t>(v * 10 + uint64_t(peek() - '0'), uint64_t(1) << 40);
      ++pos_;
    }
    if (pos_ == start) fail("expecting a number");
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
  bool failed_ = false;
  std::string error_;
  GrammarBuilder b_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, const BuildLimits& limits) { return GbnfParser(text).parse(limits); }

}  // namespace pagoda::grammar
