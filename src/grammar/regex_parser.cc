// regex_to_expr / parse_regex (regex_parser.h): a recursive-descent parser writing into a GrammarBuilder.
#include "grammar/regex_parser.h"

#include <fmt/format.h>

#include "grammar/json_string_chars.h"

namespace pagoda::grammar {
namespace {

constexpr int32_t kMaxGroupNesting = 256;
constexpr uint32_t kMaxRegexRepetition = 10000;

CodePointSet digits() { return CodePointSet::range('0', '9'); }
CodePointSet word_chars() {
  CodePointSet s = CodePointSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CodePointSet space_chars() {  // ECMA-262 WhiteSpace and LineTerminator
  CodePointSet s = CodePointSet::range('\t', '\r');
  for (uint32_t cp : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.add(cp, cp);
  s.add(0x2000, 0x200A);
  return s;
}
CodePointSet dot_chars() {
  CodePointSet s = CodePointSet::all();
  s.remove('\n', '\n');
  s.remove('\r', '\r');
  s.remove(0x2028, 0x2029);
  return s;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, RegexMode mode, GrammarBuilder& b) : p_(pattern), mode_(mode), b_(b) {}

  Result<GrammarBuilder::Expr> parse() {
    std::vector<GrammarBuilder::Expr> alts;
    parse_top(alts, false, 0);
    if (failed_) return make_error(error_, StatusCode::kInvalidArgument);
    return b_.choice(std::move(alts));
  }

 private:
  using Expr = GrammarBuilder::Expr;

  // The top-level alternatives into `alts`: to the pattern's end, or (`in_group`) to the ')' of a group that is a
  // whole top-level alternative, whose alternatives are top-level ones too: `^$|(^a+$)` is `^$|^a+$`.
  void parse_top(std::vector<Expr>& alts, bool in_group, int32_t depth) {
    while (true) {
      if (const size_t open = whole_group_here(); open > 0) {
        if (depth >= kMaxGroupNesting) {
          fail(fmt::format("groups nested deeper than {}", kMaxGroupNesting));
          return;
        }
        pos_ += open;
        parse_top(alts, true, depth + 1);
        if (failed_) return;
        ++pos_;  // its ')'
      } else {
        parse_top_alternative(alts, in_group, depth);
        if (failed_) return;
      }
      if (in_group ? peek() == ')' : at_end()) return;
      if (peek() == '|') {
        ++pos_;
        continue;
      }
      fail(peek() == ')' ? "unmatched ')'" : fmt::format("unexpected '{}'", peek()));
      return;
    }
  }

  // The length of the opening of a group, "(" or "(?:", that starts here and is the whole alternative (its ')'
  // followed by the end, '|', or the ')' of a group it is inside); 0 if none.
  size_t whole_group_here() const {
    if (peek() != '(') return 0;
    const size_t open = peek(1) == '?' ? (peek(2) == ':' ? 3 : 0) : 1;
    if (open == 0) return 0;
    int32_t depth = 0;
    bool in_class = false;
    for (size_t i = pos_; i < p_.size(); ++i) {
      const char c = p_[i];
      if (c == '\\') {
        ++i;
      } else if (in_class) {
        in_class = c != ']';
      } else if (c == '[') {
        in_class = true;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')' && --depth == 0) {
        const char next = i + 1 < p_.size() ? p_[i + 1] : '\0';
        return next == '\0' || next == '|' || next == ')' ? open : 0;
      }
    }
    return 0;
  }

  // One top-level alternative: its anchors, its lookaheads, and (searching) any text around it.
  void parse_top_alternative(std::vector<Expr>& alts, bool in_group, int32_t depth) {
    bool anchored_start = false, anchored_end = false;
    if (peek() == '^') {
      ++pos_;
      anchored_start = true;
    }
    std::vector<Lookahead> lookaheads;
    GrammarBuilder::Expr body = parse_alternative(depth, &anchored_end, &lookaheads, in_group);
    if (failed_) return;
    const bool search = mode_ == RegexMode::kJsonStringSearch;
    if (!lookaheads.empty()) {
      body = with_lookaheads(std::move(lookaheads), search && !anchored_end ? any_string() : b_.empty());
      if (search && !anchored_start) body = b_.sequence({any_string(), body});
    } else if (search) {
      body =
          b_.sequence({anchored_start ? b_.empty() : any_string(), body, anchored_end ? b_.empty() : any_string()});
    }
    alts.push_back(body);
  }

  // A lookahead of a top-level alternative, (?=X) or (?!X), before its items[at]: it looks at the rest of the
  // input, so the alternative's tail from there (its items, then the end: nothing after `$`, anything after an
  // unanchored search pattern) is intersected with X followed by anything (X alone when it ends with '$'), or has
  // that removed. Inside a group the rest of the input is not the group's, so lookaheads there stay refused.
  struct Lookahead {
    size_t at = 0;
    bool negative = false;
    Expr expr = 0;
  };

  Expr any_string() { return b_.star(chars(CodePointSet::all())); }

  // The alternative's items (in lookahead_items_) with its lookaheads applied from the last to the first.
  Expr with_lookaheads(std::vector<Lookahead> lookaheads, Expr end) {
    std::vector<Expr>& items = lookahead_items_;
    Expr tail = end;
    size_t upto = items.size();
    for (auto la = lookaheads.rbegin(); la != lookaheads.rend(); ++la) {
      std::vector<Expr> rest(items.begin() + ptrdiff_t(la->at), items.begin() + ptrdiff_t(upto));
      rest.push_back(tail);
      tail = b_.sequence(std::move(rest));
      const Expr seen = la->expr;
      tail = la->negative ? b_.difference(tail, seen) : b_.intersection({tail, seen});
      upto = la->at;
    }
    std::vector<Expr> head(items.begin(), items.begin() + ptrdiff_t(upto));
    head.push_back(tail);
    return b_.sequence(std::move(head));
  }

  void fail(std::string message) {
    if (failed_) return;
    failed_ = true;
    error_ = fmt::format("regex /{}/: {} (at offset {})", p_, message, pos_);
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }

  Expr chars(const CodePointSet& set) {
    return mode_ == RegexMode::kJsonStringSearch ? json_string_chars(b_, set) : b_.code_points(set);
  }

  // alternative := term*; `top_end` (top level only) receives whether it ended with '$'; `lookaheads` (top level
  // only) receives its lookaheads, and its items are then left in lookahead_items_ for with_lookaheads.
  // `closes_group`: the alternative of a top-level lookahead or of a group that is a whole top-level alternative,
  // whose '$' may come before its ')'.
  Expr parse_alternative(int32_t depth, bool* top_end, std::vector<Lookahead>* lookaheads = nullptr,
                         bool closes_group = false) {
    std::vector<Expr> items;
    while (!failed_ && !at_end() && peek() != '|' && peek() != ')') {
      if (lookaheads != nullptr && peek() == '(' && peek(1) == '?' && (peek(2) == '=' || peek(2) == '!')) {
        const bool negative = peek(2) == '!';
        pos_ += 3;
        // What the lookahead sees: each alternative followed by anything, or by nothing when it ends with '$'.
        std::vector<Expr> alts;
        do {
          if (!alts.empty()) ++pos_;
          bool ends = false;
          const Expr alt = parse_alternative(depth + 1, &ends, nullptr, /*closes_group=*/true);
          alts.push_back(ends ? alt : b_.sequence({alt, any_string()}));
        } while (!failed_ && peek() == '|');
        if (failed_) break;
        if (peek() != ')') {
          fail("missing ')'");
          break;
        }
        ++pos_;
        if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
          fail("a quantifier after a lookahead assertion is not supported");
          break;
        }
        lookaheads->push_back({items.size(), negative, b_.choice(std::move(alts))});
        continue;
      }
      if (peek() == '$') {
        ++pos_;
        if (top_end != nullptr && (at_end() || peek() == '|' || (closes_group && peek() == ')'))) {
          *top_end = true;
          break;
        }
        fail("'$' is only supported at the end of the pattern");
        break;
      }
      if (peek() == '^') {
        fail("'^' is only supported at the start of the pattern");
        break;
      }
      Expr atom = parse_atom(depth);
      if (failed_) break;
      atom = parse_quantifier(atom);
      items.push_back(atom);
    }
    if (lookaheads != nullptr && !lookaheads->empty()) lookahead_items_ = items;
    return b_.sequence(std::move(items));
  }

  Expr parse_quantifier(Expr atom) {
    uint32_t min = 1, max = 1;
    const char c = peek();
    if (c == '*') {
      min = 0, max = kUnbounded;
      ++pos_;
    } else if (c == '+') {
      min = 1, max = kUnbounded;
      ++pos_;
    } else if (c == '?') {
      min = 0, max = 1;
      ++pos_;
    } else if (c == '{') {
      // {n}, {n,}, {n,m}; anything else is a literal '{' (ECMA-262 Annex B), left for parse_atom.
      size_t i = pos_ + 1;
      auto number = [&](uint64_t& v) {
        const size_t start = i;
        v = 0;
        while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9')
          v = std::min<uint64_t>(v * 10 + uint64_t(p_[i++] - '0'), 1ull << 40);
        return i > start;
      };
      uint64_t n = 0, m = 0;
      if (!number(n)) return atom;
      m = n;
      if (i < p_.size() && p_[i] == ',') {
        ++i;
        if (!number(m)) m = kUnbounded;
      }
      if (i >= p_.size() || p_[i] != '}') return atom;
      pos_ = i + 1;
      if (n > kMaxRegexRepetition || (m != kUnbounded && m > kMaxRegexRepetition)) {
        fail(fmt::format("repetition count above {}", kMaxRegexRepetition));
        return atom;
      }
      if (m < n) {
        fail("repetition maximum below its minimum");
        return atom;
      }
      min = uint32_t(n), max = uint32_t(m);
    } else {
      return atom;
    }
    if (peek() == '?') ++pos_;  // lazy: the same language
    if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && peek(1) >= '0' && peek(1) <= '9')) {
      fail("nothing to repeat (a quantifier after a quantifier)");
      return atom;
    }
    return b_.repeat(atom, min, max);
  }

  Expr parse_atom(int32_t depth) {
    const char c = peek();
    if (c == '(') {
      if (depth >= kMaxGroupNesting) {
        fail(fmt::format("groups nested deeper than {}", kMaxGroupNesting));
        return b_.empty();
      }
      ++pos_;
      if (peek() == '?') {
        const char k = peek(1);
        if (k == ':') {
          pos_ += 2;
        } else if (k == '=' || k == '!') {
          fail("lookahead assertions are only supported at the top level of a pattern");
          return b_.empty();
        } else if (k == '<' && (peek(2) == '=' || peek(2) == '!')) {
          fail("lookbehind assertions are not supported");
          return b_.empty();
        } else if (k == '<' || (k == 'P' && peek(2) == '<')) {
          pos_ += k == 'P' ? 3 : 2;
          while (!at_end() && peek() != '>') ++pos_;
          if (at_end()) {
            fail("unterminated group name");
            return b_.empty();
          }
          ++pos_;
        } else if (k == 'P' && peek(2) == '=') {
          fail("backreferences are not supported");
          return b_.empty();
        } else {
          fail("inline flags and other (?...) groups are not supported");
          return b_.empty();
        }
      }
      std::vector<Expr> alts{parse_alternative(depth + 1, nullptr)};
      while (!failed_ && peek() == '|') {
        ++pos_;
        alts.push_back(parse_alternative(depth + 1, nullptr));
      }
      if (failed_) return b_.empty();
      if (peek() != ')') {
        fail("missing ')'");
        return b_.empty();
      }
      ++pos_;
      return b_.choice(std::move(alts));
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return chars(dot_chars());
    }
    if (c == '*' || c == '+' || c == '?') {
      fail("nothing to repeat");
      return b_.empty();
    }
    if (c == '{' && peek(1) >= '0' && peek(1) <= '9') {
      // A well-formed quantifier here has nothing before it.
      size_t i = pos_ + 1;
      while (i < p_.size() && ((p_[i] >= '0' && p_[i] <= '9') || p_[i] == ',')) ++i;
      if (i < p_.size() && p_[i] == '}') {
        fail("nothing to repeat");
        return b_.empty();
      }
    }
    if (c == '\\') {
      CodePointSet set;
      if (!parse_escape(false, set)) return b_.empty();
      return chars(set);
    }
    uint32_t cp = 0;
    if (!next_code_point(cp)) return b_.empty();
    return chars(CodePointSet::single(cp));
  }

  bool next_code_point(uint32_t& cp) {
    const std::string rest(p_.substr(pos_, 4));
    size_t n = 0;
    if (!decode_utf8(rest, n, cp)) {
      fail("invalid UTF-8");
      return false;
    }
    pos_ += n;
    return true;
  }

  bool hex_value(size_t start, size_t count, uint32_t& v) {
    v = 0;
    for (size_t i = 0; i < count; ++i) {
      const char h = start + i < p_.size() ? p_[start + i] : '\0';
      const int32_t d = (h >= '0' && h <= '9')   ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                 : -1;
      if (d < 0) return false;
      v = v * 16 + uint32_t(d);
    }
    return true;
  }

  // After a backslash (at pos_): one character or a class escape, added to `set`. False after fail().
  bool parse_escape(bool in_class, CodePointSet& set) {
    ++pos_;
    if (at_end()) {
      fail("pattern ends with a backslash");
      return false;
    }
    const char e = peek();
    ++pos_;
    auto one = [&](uint32_t cp) {
      set.add(cp, cp);
      return true;
    };
    switch (e) {
      case 'd': set.add(digits()); return true;
      case 'D': set.add(digits().complement()); return true;
      case 'w': set.add(word_chars()); return true;
      case 'W': set.add(word_chars().complement()); return true;
      case 's': set.add(space_chars()); return true;
      case 'S': set.add(space_chars().complement()); return true;
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'b':
        if (in_class) return one('\b');
        fail("word boundary assertions (\\b) are not supported");
        return false;
      case 'B': fail("word boundary assertions (\\B) are not supported"); return false;
      case '0':
        if (peek() >= '0' && peek() <= '9') {
          fail("octal escapes are not supported");
          return false;
        }
        return one(0);
      case 'x': {
        uint32_t v;
        if (!hex_value(pos_, 2, v)) {
          fail("\\x needs two hex digits");
          return false;
        }
        pos_ += 2;
        return one(v);
      }
      case 'u': {
        uint32_t v;
        if (peek() == '{') {
          size_t end = p_.find('}', pos_);
          if (end == std::string_view::npos || end == pos_ + 1 || end - pos_ - 1 > 6 ||
              !hex_value(pos_ + 1, end - pos_ - 1, v) || v > kMaxCodePoint) {
            fail("malformed \\u{...} escape");
            return false;
          }
          pos_ = end + 1;
        } else {
          if (!hex_value(pos_, 4, v)) {
            fail("\\u needs four hex digits");
            return false;
          }
          pos_ += 4;
          uint32_t lo;
          // A surrogate pair written as two escapes is one character.
          if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u' && hex_value(pos_ + 2, 4, lo) &&
              lo >= 0xDC00 && lo <= 0xDFFF) {
            pos_ += 6;
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
          }
        }
        if (v >= 0xD800 && v <= 0xDFFF) {
          fail("a lone surrogate escape matches no UTF-8 text");
          return false;
        }
        return one(v);
      }
      case 'c': {
        const char l = peek();
        if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
          ++pos_;
          return one(uint32_t(l) % 32);
        }
        fail("\\c needs a letter");
        return false;
      }
      case 'p':
      case 'P': fail("Unicode property escapes (\\p{...}) are not supported"); return false;
      case 'k': fail("backreferences are not supported"); return false;
      default:
        if (e >= '1' && e <= '9') {
          fail("backreferences are not supported");
          return false;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
          fail(fmt::format("unknown escape \\{}", e));
          return false;
        }
        if (uint8_t(e) >= 0x80) {
          --pos_;
          uint32_t cp;
          if (!next_code_point(cp)) return false;
          return one(cp);
        }
        return one(uint8_t(e));  // escaped punctuation stands for itself
    }
  }

  Expr parse_class() {
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    CodePointSet set;
    bool first = true;
    while (!failed_) {
      if (at_end()) {
        fail("missing ']'");
        return b_.empty();
      }
      if (peek() == ']' && !first) break;
      if (peek() == ']' && first) {  // ECMA: [] is the empty class, []] is not a class of ']'
        break;
      }
      if (peek() == '[' && peek(1) == ':') {
        fail("POSIX character classes ([:name:]) are not supported");
        return b_.empty();
      }
      first = false;
      CodePointSet lo_set;
      bool lo_single = false;
      uint32_t lo = 0;
      if (!class_atom(lo_set, lo_single, lo)) return b_.empty();
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        ++pos_;
        CodePointSet hi_set;
        bool hi_single = false;
        uint32_t hi = 0;
        if (!class_atom(hi_set, hi_single, hi)) return b_.empty();
        if (lo_single && hi_single) {
          if (hi < lo) {
            fail("character range is out of order");
            return b_.empty();
          }
          set.add(lo, hi);
        } else {  // a class escape next to '-': the '-' is literal (Annex B)
          set.add(lo_set);
          set.add('-', '-');
          set.add(hi_set);
        }
      } else {
        set.add(lo_set);
      }
    }
    ++pos_;  // ']'
    return chars(negated ? set.complement() : set);
  }

  // One class member: a single character (single = true, cp) or a class escape (set).
  bool class_atom(CodePointSet& set, bool& single, uint32_t& cp) {
    if (peek() == '\\') {
      const char e = peek(1);
      const bool is_class = e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S';
      if (!parse_escape(true, set)) return false;
      single = !is_class;
      if (single) cp = set.ranges().front().lo;
      return true;
    }
    if (!next_code_point(cp)) return false;
    set.add(cp, cp);
    single = true;
    return true;
  }

  std::string_view p_;
  RegexMode mode_;
  GrammarBuilder& b_;
  std::vector<Expr> lookahead_items_;  // the last top-level alternative's items, when it has lookaheads
  size_t pos_ = 0;
  bool failed_ = false;
  std::string error_;
};

}  // namespace

Result<GrammarBuilder::Expr> regex_to_expr(std::string_view pattern, RegexMode mode, GrammarBuilder& builder) {
  return RegexParser(pattern, mode, builder).parse();
}

Result<Grammar> parse_regex(std::string_view pattern, const BuildLimits& limits) {
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  PAGODA_ASSIGN_OR_RETURN(const GrammarBuilder::Expr body, regex_to_expr(pattern, RegexMode::kFullMatch, b));
  b.set_body(root, body);
  Result<Grammar> g = b.build(root, limits);
  if (!g.ok()) return make_error(fmt::format("regex /{}/: {}", pattern, g.error()), g.status().code());
  return g;
}

}  // namespace pagoda::grammar
