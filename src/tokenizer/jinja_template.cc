// JinjaTemplate: lexer (source -> tokens, whitespace control applied), parser (tokens -> syntax tree) and
// renderer (tree + context -> text). Internally errors are thrown as JinjaError and turned into a Status at the
// two public entry points, so the recursive code stays readable; nothing escapes parse() or render().
#include "tokenizer/jinja_template.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace pagoda {
namespace jinja {

using Json = nlohmann::ordered_json;

struct JinjaError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw JinjaError{std::move(message)}; }

// ---------------------------------------------------------------------------------------------------------------
// Lexer

enum class TokenKind { kText, kExprOpen, kExprClose, kBlockOpen, kBlockClose, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  TokenKind kind;
  std::string text;  // kText: the literal text; kName/kOp: the spelling; kString: the decoded value
  int64_t int_value = 0;
  double float_value = 0;
  int32_t line = 1;
  int32_t col = 1;
};

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  Lexer(std::string_view source, const JinjaOptions& options) : src_(source), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> tokenize() {
    size_t pos = 0;
    bool strip_next_leading = false;  // the previous tag ended with '-'
    bool trim_next_newline = false;   // the previous tag was a block or comment (trim_blocks)
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      std::string text(src_.substr(pos, tag - pos));
      if (strip_next_leading) {
        text.erase(0, text.find_first_not_of(" \t\r\n\f\v"));
        if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) text.clear();
      } else if (trim_next_newline) {
        if (text.starts_with("\r\n"))
          text.erase(0, 2);
        else if (text.starts_with("\n"))
          text.erase(0, 1);
      }
      strip_next_leading = trim_next_newline = false;
      if (tag == src_.size()) {
        push_text(std::move(text), pos);
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      size_t inner = tag + 2;
      if (inner < src_.size() && src_[inner] == '-') {
        size_t keep = text.find_last_not_of(" \t\r\n\f\v");
        text.erase(keep == std::string::npos ? 0 : keep + 1);
        ++inner;
      } else if (inner < src_.size() && src_[inner] == '+') {
        ++inner;  // '+' turns lstrip_blocks off for this tag
      } else if (options_.lstrip_blocks && kind != '{') {
        lstrip_line(text, pos);
      }
      push_text(std::move(text), pos);
      if (kind == '#') {
        size_t end = src_.find("#}", inner);
        if (end == std::string_view::npos) fail(where(tag) + "unterminated comment (missing '#}')");
        strip_next_leading = end > inner && src_[end - 1] == '-';
        trim_next_newline = options_.trim_blocks;
        pos = end + 2;
        continue;
      }
      bool is_block = kind == '%';
      push(is_block ? TokenKind::kBlockOpen : TokenKind::kExprOpen, is_block ? "{%" : "{{", tag);
      pos = lex_tag(inner, is_block, tag, &strip_next_leading);
      trim_next_newline = is_block && options_.trim_blocks;
    }
    push(TokenKind::kEof, "end of template", src_.size());
    return std::move(tokens_);
  }

  std::string where(size_t offset) const {
    auto [line, col] = line_col(offset);
    return "jinja: line " + std::to_string(line) + ", col " + std::to_string(col) + ": ";
  }

 private:
  std::pair<int32_t, int32_t> line_col(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line_idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
    return {static_cast<int32_t>(line_idx + 1), static_cast<int32_t>(offset - line_starts_[line_idx] + 1)};
  }

  size_t find_tag(size_t pos) const {
    while (true) {
      size_t brace = src_.find('{', pos);
      if (brace == std::string_view::npos || brace + 1 >= src_.size()) return src_.size();
      char c = src_[brace + 1];
      if (c == '{' || c == '%' || c == '#') return brace;
      pos = brace + 1;
    }
  }

  // lstrip_blocks: remove the spaces and tabs between the start of the line and a block tag.
  void lstrip_line(std::string& text, size_t text_offset) const {
    size_t newline = text.find_last_of('\n');
    size_t from = newline == std::string::npos ? 0 : newline + 1;
    if (newline == std::string::npos) {
      bool at_line_start = text_offset == 0 || src_[text_offset - 1] == '\n';
      if (!at_line_start) return;
    }
    if (text.find_first_not_of(" \t", from) != std::string::npos) return;
    text.erase(from);
  }

  void push(TokenKind kind, std::string text, size_t offset) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    std::tie(t.line, t.col) = line_col(offset);
    tokens_.push_back(std::move(t));
  }
  void push_text(std::string text, size_t offset) {
    if (!text.empty()) push(TokenKind::kText, std::move(text), offset);
  }

  // Lexes the inside of a tag up to and including its closing marker; returns the offset after it.
  size_t lex_tag(size_t pos, bool is_block, size_t tag_offset, bool* strip_next_leading) {
    const char close_char = is_block ? '%' : '}';
    int32_t brace_depth = 0;  // '{' of dict literals, so that "}}" inside them does not close the tag
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size()) fail(where(tag_offset) + "unterminated tag (missing '" + (is_block ? "%}" : "}}") + "')");
      char c = src_[pos];
      auto closes_at = [&](size_t p) { return p + 1 < src_.size() && src_[p] == close_char && src_[p + 1] == '}'; };
      if (brace_depth == 0 && c == '-' && closes_at(pos + 1)) {
        *strip_next_leading = true;
        push(is_block ? TokenKind::kBlockClose : TokenKind::kExprClose, is_block ? "%}" : "}}", pos);
        return pos + 3;
      }
      if (brace_depth == 0 && closes_at(pos)) {
        push(is_block ? TokenKind::kBlockClose : TokenKind::kExprClose, is_block ? "%}" : "}}", pos);
        return pos + 2;
      }
      if (c == '+' && is_block && closes_at(pos + 1)) {  // "+%}" keeps the newline; trim_blocks still applies
        push(TokenKind::kBlockClose, "%}", pos);
        return pos + 3;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos;
        while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
        push(TokenKind::kName, std::string(src_.substr(pos, end - pos)), pos);
        pos = end;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        pos = lex_number(pos);
      } else if (c == '\'' || c == '"') {
        pos = lex_string(pos);
      } else {
        static constexpr std::string_view kTwoCharOps[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (std::string_view two : kTwoCharOps)
          if (src_.substr(pos, 2) == two) op = std::string(two);
        if (op.size() == 1 && (c == '\0' || !std::strchr("+-*/%~|.,:()[]{}<>=!", c)))
          fail(where(pos) + "unexpected character '" + op + "'");
        if (op == "{") ++brace_depth;
        if (op == "}") --brace_depth;
        push(TokenKind::kOp, op, pos);
        pos += op.size();
      }
    }
  }

  size_t lex_number(size_t pos) {
    size_t end = pos;
    auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
    };
    digits();
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && std::isdigit(static_cast<unsigned char>(src_[exp]))) {
        is_float = true;
        end = exp;
        digits();
      }
    }
    std::string spelling;
    for (size_t i = pos; i < end; ++i)
      if (src_[i] != '_') spelling += src_[i];
    Token t;
    std::tie(t.line, t.col) = line_col(pos);
    t.text = spelling;
    if (is_float) {
      t.kind = TokenKind::kFloat;
      t.float_value = std::strtod(spelling.c_str(), nullptr);
    } else {
      t.kind = TokenKind::kInt;
      auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), t.int_value);
      if (ec != std::errc()) fail(where(pos) + "integer literal out of range: " + spelling);
    }
    tokens_.push_back(std::move(t));
    return end;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Python string literal escapes; an unknown escape keeps its backslash, as Python does.
  size_t lex_string(size_t pos) {
    char quote = src_[pos];
    std::string value;
    size_t i = pos + 1;
    while (true) {
      if (i >= src_.size()) fail(where(pos) + "unterminated string literal");
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) fail(where(pos) + "unterminated string literal");
      char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          size_t num_digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + num_digits > src_.size()) fail(where(pos) + "truncated \\" + std::string(1, e) + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < num_digits; ++k) {
            char h = src_[i + k];
            int digit = std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                        : (h >= 'a' && h <= 'f')                    ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F')                    ? h - 'A' + 10
                                                                    : -1;
            if (digit < 0) fail(where(pos) + "bad hex digit in \\" + std::string(1, e) + " escape");
            cp = cp * 16 + static_cast<uint32_t>(digit);
          }
          if (cp > 0x10FFFF) fail(where(pos) + "escape beyond U+10FFFF");
          append_utf8(value, cp);
          i += num_digits;
          break;
        }
        default: value += '\\'; value += e;
      }
    }
    Token t;
    t.kind = TokenKind::kString;
    t.text = std::move(value);
    std::tie(t.line, t.col) = line_col(pos);
    tokens_.push_back(std::move(t));
    return i + 1;
  }

  std::string_view src_;
  const JinjaOptions& options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

// ---------------------------------------------------------------------------------------------------------------
// Syntax tree

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kList,     // children: items
  kDict,     // children: key, value, key, value...
  kAttr,     // children[0].name
  kIndex,    // children[0][children[1]]
  kSlice,    // children[0][children[1]:children[2]:children[3]] (null children are omitted bounds)
  kCall,     // children[0](children[1..], kwargs)
  kFilter,   // children[0] | name(children[1..], kwargs)
  kTest,     // children[0] is [not] name(children[1..])
  kUnary,    // name: "-", "+", "not"
  kBinary,   // name: the operator, including "and", "or", "in", "not in"
  kTernary,  // children[1] if children[0] else children[2] (null: undefined)
};

struct Expr {
  ExprKind kind;
  int32_t line = 0;
  std::string name;
  Json literal;
  bool negated = false;  // kTest: "is not"
  int32_t depth = 1;     // of this subtree: evaluation recurses this deep
  std::vector<std::unique_ptr<Expr>> children;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind { kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue };

struct Node {
  NodeKind kind;
  int32_t line = 0;
  std::string text;                     // kText
  ExprPtr expr;                         // kOutput, kSet value, kFor iterable
  std::vector<ExprPtr> conditions;      // kIf: one per branch; kFor: [filter] when present
  std::vector<Body> bodies;             // kIf: one per branch (+ else); kFor: body (+ else); kSetBlock/kMacro: body
  std::vector<std::string> targets;     // kFor / kSet: names ("ns.x" for attribute assignment); kMacro: name
  std::vector<std::string> params;      // kMacro parameter names
  std::vector<ExprPtr> param_defaults;  // kMacro: one per param, null when none
  bool has_else = false;
};

}  // namespace jinja

struct jinja::Program {
  Body body;
  JinjaLimits limits;
};

namespace jinja {

// ---------------------------------------------------------------------------------------------------------------
// Parser

class Parser {
 public:
  Parser(std::vector<Token> tokens, int32_t max_depth) : tokens_(std::move(tokens)), max_depth_(max_depth) {}

  Body parse_template() {
    std::string end_tag;
    Body body = parse_body({}, &end_tag);
    return body;
  }

 private:
  struct DepthGuard {
    Parser* parser;
    explicit DepthGuard(Parser* p, const Token& at) : parser(p) {
      if (++parser->depth_ > parser->max_depth_)
        fail(position(at) + "nesting deeper than " + std::to_string(parser->max_depth_) + " levels");
    }
    ~DepthGuard() { --parser->depth_; }
  };

  static std::string position(const Token& t) {
    return "jinja: line " + std::to_string(t.line) + ", col " + std::to_string(t.col) + ": ";
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kEof: return "end of template";
      case TokenKind::kString: return "a string";
      case TokenKind::kText: return "text";
      default: return "'" + t.text + "'";
    }
  }

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOp && peek(ahead).text == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool accept_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& expected) const {
    fail(position(t) + "expected " + expected + ", found " + describe(t));
  }
  void expect_op(std::string_view op) {
    if (!accept_op(op)) fail_at(peek(), "'" + std::string(op) + "'");
  }
  void expect_kind(TokenKind kind, const std::string& what) {
    if (peek().kind != kind) fail_at(peek(), what);
    next();
  }
  std::string expect_identifier() {
    if (peek().kind != TokenKind::kName) fail_at(peek(), "a name");
    return next().text;
  }

  // Parses nodes until a block tag whose keyword is in `end_keywords` (left unconsumed after "{%" and keyword,
  // returned in *end_tag) or, with no end keywords, until the end of the template.
  Body parse_body(const std::vector<std::string_view>& end_keywords, std::string* end_tag) {
    DepthGuard guard(this, peek());
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEof) {
        if (!end_keywords.empty()) {
          std::string names;
          for (std::string_view k : end_keywords) names += (names.empty() ? "'" : " or '") + std::string(k) + "'";
          fail(position(t) + "unexpected end of template, expected " + names);
        }
        return body;
      }
      if (t.kind == TokenKind::kText) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::kText;
        node->line = t.line;
        node->text = next().text;
        body.push_back(std::move(node));
      } else if (t.kind == TokenKind::kExprOpen) {
        next();
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::kOutput;
        node->line = t.line;
        node->expr = parse_expression();
        expect_kind(TokenKind::kExprClose, "'}}'");
        body.push_back(std::move(node));
      } else if (t.kind == TokenKind::kBlockOpen) {
        const Token& keyword = peek(1);
        if (keyword.kind != TokenKind::kName) fail_at(keyword, "a tag name");
        for (std::string_view k : end_keywords) {
          if (keyword.text == k) {
            next();
            next();
            *end_tag = keyword.text;
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        fail_at(t, "text or a tag");
      }
    }
  }

  NodePtr parse_statement() {
    const Token& keyword = next();
    int32_t line = keyword.line;
    auto node = std::make_unique<Node>();
    node->line = line;
    const std::string& k = keyword.text;
    if (k == "if") {
      node->kind = NodeKind::kIf;
      node->conditions.push_back(parse_expression());
      expect_kind(TokenKind::kBlockClose, "'%}'");
      while (true) {
        std::string end_tag;
        node->bodies.push_back(parse_body({"elif", "else", "endif"}, &end_tag));
        if (end_tag == "elif") {
          node->conditions.push_back(parse_expression());
          expect_kind(TokenKind::kBlockClose, "'%}'");
        } else if (end_tag == "else") {
          expect_kind(TokenKind::kBlockClose, "'%}'");
          node->has_else = true;
          node->bodies.push_back(parse_body({"endif"}, &end_tag));
          expect_kind(TokenKind::kBlockClose, "'%}'");
          break;
        } else {
          expect_kind(TokenKind::kBlockClose, "'%}'");
          break;
        }
      }
    } else if (k == "for") {
      node->kind = NodeKind::kFor;
      node->targets.push_back(expect_identifier());
      while (accept_op(",")) node->targets.push_back(expect_identifier());
      if (!accept_name("in")) fail_at(peek(), "'in'");
      node->expr = parse_or();  // not a ternary: "if" here is the loop filter
      if (accept_name("if")) node->conditions.push_back(parse_or());
      if (accept_name("recursive")) fail(position(keyword) + "recursive loops are not supported");
      expect_kind(TokenKind::kBlockClose, "'%}'");
      std::string end_tag;
      node->bodies.push_back(parse_body({"else", "endfor"}, &end_tag));
      expect_kind(TokenKind::kBlockClose, "'%}'");
      if (end_tag == "else") {
        node->has_else = true;
        node->bodies.push_back(parse_body({"endfor"}, &end_tag));
        expect_kind(TokenKind::kBlockClose, "'%}'");
      }
    } else if (k == "set") {
      std::string target = expect_identifier();
      if (accept_op(".")) target += "." + expect_identifier();
      node->targets.push_back(target);
      if (accept_op("=")) {
        node->kind = NodeKind::kSet;
        node->expr = parse_expression();
        expect_kind(TokenKind::kBlockClose, "'%}'");
      } else {
        if (target.find('.') != std::string::npos) fail_at(peek(), "'='");
        node->kind = NodeKind::kSetBlock;
        expect_kind(TokenKind::kBlockClose, "'%}'");
        std::string end_tag;
        node->bodies.push_back(parse_body({"endset"}, &end_tag));
        expect_kind(TokenKind::kBlockClose, "'%}'");
      }
    } else if (k == "macro") {
      node->kind = NodeKind::kMacro;
      node->targets.push_back(expect_identifier());
      expect_op("(");
      while (!accept_op(")")) {
        node->params.push_back(expect_identifier());
        node->param_defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
        if (!at_op(")")) expect_op(",");
      }
      expect_kind(TokenKind::kBlockClose, "'%}'");
      std::string end_tag;
      node->bodies.push_back(parse_body({"endmacro"}, &end_tag));
      expect_kind(TokenKind::kBlockClose, "'%}'");
    } else if (k == "break" || k == "continue") {
      node->kind = k == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      expect_kind(TokenKind::kBlockClose, "'%}'");
    } else {
      fail(position(keyword) + "unknown or unsupported tag '" + k + "'");
    }
    return node;
  }

  // Long operator or filter chains build deep trees without nested syntax; evaluation recurses over the tree,
  // so its depth is bounded too.
  ExprPtr checked(ExprPtr e) {
    int32_t depth = 0;
    for (const ExprPtr& c : e->children)
      if (c) depth = std::max(depth, c->depth);
    for (const auto& [key, value] : e->kwargs) depth = std::max(depth, value->depth);
    e->depth = depth + 1;
    if (e->depth > max_depth_)
      fail("jinja: line " + std::to_string(e->line) + ": expression nesting deeper than " + std::to_string(max_depth_) +
           " levels");
    return e;
  }

  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    return e;
  }
  ExprPtr make_binary(std::string op, ExprPtr left, ExprPtr right, const Token& at) {
    auto e = make(ExprKind::kBinary, at);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return checked(std::move(e));
  }

  ExprPtr parse_expression() {
    const Token& at = peek();
    ExprPtr value = parse_or();
    if (accept_name("if")) {
      auto e = make(ExprKind::kTernary, at);
      ExprPtr condition = parse_or();
      ExprPtr otherwise = accept_name("else") ? parse_expression() : nullptr;
      e->children.push_back(std::move(condition));
      e->children.push_back(std::move(value));
      e->children.push_back(std::move(otherwise));
      return checked(std::move(e));
    }
    return value;
  }
  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      const Token& at = next();
      left = make_binary("or", std::move(left), parse_and(), at);
    }
    return left;
  }
  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      const Token& at = next();
      left = make_binary("and", std::move(left), parse_not(), at);
    }
    return left;
  }
  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(this, peek());
      const Token& at = next();
      auto e = make(ExprKind::kUnary, at);
      e->name = "not";
      e->children.push_back(parse_not());
      return checked(std::move(e));
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr left = parse_add();
    while (true) {
      const Token& at = peek();
      std::string op;
      if (at.kind == TokenKind::kOp && (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == "<=" ||
                                        at.text == ">" || at.text == ">=")) {
        op = next().text;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return left;
      }
      left = make_binary(op, std::move(left), parse_add(), at);
    }
  }
  ExprPtr parse_add() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& at = next();
      left = make_binary(at.text, std::move(left), parse_concat(), at);
    }
    return left;
  }
  ExprPtr parse_concat() {
    ExprPtr left = parse_mul();
    while (at_op("~")) {
      const Token& at = next();
      left = make_binary("~", std::move(left), parse_mul(), at);
    }
    return left;
  }
  ExprPtr parse_mul() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& at = next();
      left = make_binary(at.text, std::move(left), parse_pow(), at);
    }
    return left;
  }
  ExprPtr parse_pow() {
    ExprPtr left = parse_unary();
    while (at_op("**")) {
      const Token& at = next();
      left = make_binary("**", std::move(left), parse_unary(), at);
    }
    return left;
  }
  ExprPtr parse_unary() {
    if (at_op("-") || at_op("+")) {
      DepthGuard guard(this, peek());
      const Token& at = next();
      auto e = make(ExprKind::kUnary, at);
      e->name = at.text;
      e->children.push_back(parse_unary());
      return checked(std::move(e));
    }
    return parse_filters(parse_postfix(parse_primary()));
  }

  void parse_call_args(Expr& call) {
    // After "(": positional and keyword arguments up to ")".
    while (!accept_op(")")) {
      if (peek().kind == TokenKind::kName && at_op("=", 1)) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        call.children.push_back(parse_expression());
      }
      if (!at_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_postfix(ExprPtr value) {
    while (true) {
      const Token& at = peek();
      if (accept_op(".")) {
        auto e = make(ExprKind::kAttr, at);
        if (peek().kind == TokenKind::kInt) {  // "x.0": item 0, as Jinja allows
          e->kind = ExprKind::kIndex;
          e->children.push_back(std::move(value));
          auto index = make(ExprKind::kLiteral, peek());
          index->literal = next().int_value;
          e->children.push_back(std::move(index));
        } else {
          e->name = expect_identifier();
          e->children.push_back(std::move(value));
        }
        value = checked(std::move(e));
      } else if (accept_op("[")) {
        DepthGuard guard(this, at);
        ExprPtr parts[3];
        bool is_slice = false;
        for (int part = 0; part < 3; ++part) {
          if (!at_op(":") && !at_op("]")) parts[part] = parse_expression();
          if (part < 2 && accept_op(":")) {
            is_slice = true;
            continue;
          }
          break;
        }
        expect_op("]");
        auto e = make(is_slice ? ExprKind::kSlice : ExprKind::kIndex, at);
        if (!is_slice && !parts[0]) fail_at(at, "an index");
        e->children.push_back(std::move(value));
        for (int part = 0; part < (is_slice ? 3 : 1); ++part) e->children.push_back(std::move(parts[part]));
        value = checked(std::move(e));
      } else if (accept_op("(")) {
        DepthGuard guard(this, at);
        auto e = make(ExprKind::kCall, at);
        e->children.push_back(std::move(value));
        parse_call_args(*e);
        value = checked(std::move(e));
      } else {
        return value;
      }
    }
  }

  ExprPtr parse_filters(ExprPtr value) {
    while (true) {
      const Token& at = peek();
      if (accept_op("|")) {
        DepthGuard guard(this, at);
        auto e = make(ExprKind::kFilter, at);
        e->name = expect_identifier();
        e->children.push_back(std::move(value));
        if (accept_op("(")) parse_call_args(*e);
        value = parse_postfix(checked(std::move(e)));
      } else if (at_name("is")) {
        DepthGuard guard(this, at);
        next();
        auto e = make(ExprKind::kTest, at);
        e->negated = accept_name("not");
        e->name = expect_identifier();
        e->children.push_back(std::move(value));
        if (accept_op("(")) {
          parse_call_args(*e);
        } else if (peek().kind == TokenKind::kString || peek().kind == TokenKind::kInt ||
                   peek().kind == TokenKind::kFloat ||
                   (peek().kind == TokenKind::kName && !at_name("and") && !at_name("or") && !at_name("else") &&
                    !at_name("if") && !at_name("in") && !at_name("not") && !at_name("is"))) {
          e->children.push_back(parse_primary());  // "x is sameas false", "x is divisibleby 3"
        }
        value = checked(std::move(e));
      } else {
        return value;
      }
    }
  }

  ExprPtr parse_primary() {
    DepthGuard guard(this, peek());
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::kString: {
        auto e = make(ExprKind::kLiteral, t);
        std::string value = next().text;
        while (peek().kind == TokenKind::kString) value += next().text;  // adjacent literals concatenate
        e->literal = value;
        return e;
      }
      case TokenKind::kInt: {
        auto e = make(ExprKind::kLiteral, t);
        e->literal = next().int_value;
        return e;
      }
      case TokenKind::kFloat: {
        auto e = make(ExprKind::kLiteral, t);
        e->literal = next().float_value;
        return e;
      }
      case TokenKind::kName: {
        next();
        auto e = make(ExprKind::kLiteral, t);
        if (t.text == "true" || t.text == "True") {
          e->literal = true;
        } else if (t.text == "false" || t.text == "False") {
          e->literal = false;
        } else if (t.text == "none" || t.text == "None") {
          e->literal = nullptr;
        } else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") {
          next();
          ExprPtr inner = parse_expression();
          if (at_op(",")) {  // a tuple: evaluated as a list
            auto list = make(ExprKind::kList, t);
            list->children.push_back(std::move(inner));
            while (accept_op(",") && !at_op(")")) list->children.push_back(parse_expression());
            inner = checked(std::move(list));
          }
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto e = make(ExprKind::kList, t);
          while (!accept_op("]")) {
            e->children.push_back(parse_expression());
            if (!at_op("]")) expect_op(",");
          }
          return checked(std::move(e));
        }
        if (t.text == "{") {
          next();
          auto e = make(ExprKind::kDict, t);
          while (!accept_op("}")) {
            e->children.push_back(parse_expression());
            expect_op(":");
            e->children.push_back(parse_expression());
            if (!at_op("}")) expect_op(",");
          }
          return checked(std::move(e));
        }
        [[fallthrough]];
      default: fail_at(t, "an expression");
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int32_t depth_ = 0;
  int32_t max_depth_;
};

// ---------------------------------------------------------------------------------------------------------------
// Values

// A template value: context data (JSON), Jinja's undefined, or a callable (a global function or a macro).
struct Value {
  enum class Kind { kUndefined, kData, kFunction, kMacro };
  Kind kind = Kind::kUndefined;
  Json data;
  std::string function;         // kFunction: the global's name
  const Node* macro = nullptr;  // kMacro

  static Value of(Json j) {
    Value v;
    v.kind = Kind::kData;
    v.data = std::move(j);
    return v;
  }
  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_data() const { return kind == Kind::kData; }
};

std::string type_name(const Value& v) {
  if (v.is_undefined()) return "undefined";
  if (!v.is_data()) return "function";
  switch (v.data.type()) {
    case Json::value_t::null: return "none";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "str";
    case Json::value_t::array: return "list";
    case Json::value_t::object: return "dict";
    default: return "binary";
  }
}

bool truthy(const Value& v) {
  if (v.is_undefined()) return false;
  if (!v.is_data()) return true;
  const Json& j = v.data;
  switch (j.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return j.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return j.get<int64_t>() != 0;
    case Json::value_t::number_float: return j.get<double>() != 0.0;
    case Json::value_t::string: return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !j.empty();
    default: return true;
  }
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Python's repr() of a string: single quotes unless the text has one and no double quote.
std::string python_string_repr(const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::string python_repr(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float: return python_float(j.get<double>());
    case Json::value_t::string: return python_string_repr(j.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + python_repr(j[i]);
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : j.items()) {
        out += (first ? "" : ", ") + python_string_repr(key) + ": " + python_repr(value);
        first = false;
      }
      return out + "}";
    }
    default: return "<binary>";
  }
}

// Python's str(): what {{ value }} prints.
std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (!v.is_data()) return "<function " + (v.macro ? v.macro->targets[0] : v.function) + ">";
  if (v.data.is_string()) return v.data.get<std::string>();
  return python_repr(v.data);
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Python's json.dumps(value, ensure_ascii=False, indent=indent), which transformers' tojson filter calls: key
// order kept, ", " and ": " separators without indent, "," and newlines with it.
void append_json(std::string& out, const Json& j, int32_t indent, int32_t level) {
  auto newline = [&](int32_t at_level) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(at_level), ' ');
  };
  switch (j.type()) {
    case Json::value_t::null: out += "null"; return;
    case Json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; return;
    case Json::value_t::number_float: {
      double d = j.get<double>();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float(d);
      return;
    }
    case Json::value_t::string: append_json_string(out, j.get_ref<const std::string&>()); return;
    case Json::value_t::array: {
      if (j.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(level + 1);
        append_json(out, j[i], indent, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Json::value_t::object: {
      if (j.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, value] : j.items()) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(level + 1);
        append_json_string(out, key);
        out += ": ";
        append_json(out, value, indent, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: out += j.dump(); return;
  }
}

// The UTF-8 characters of `s`, each as its byte range: Python indexes strings by character.
std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> chars;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    len = std::min(len, s.size() - i);
    chars.push_back(s.substr(i, len));
    i += len;
  }
  return chars;
}

std::string python_strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::string set = " \t\n\r\f\v";
  if (chars && chars->is_data() && chars->data.is_string()) set = chars->data.get<std::string>();
  size_t begin = 0, end = s.size();
  if (left)
    while (begin < end && set.find(s[begin]) != std::string::npos) ++begin;
  if (right)
    while (end > begin && set.find(s[end - 1]) != std::string::npos) --end;
  return s.substr(begin, end - begin);
}

// ---------------------------------------------------------------------------------------------------------------
// Renderer

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const Program& program, const Json& context) : limits_(program.limits) {
    scopes_.emplace_back();
    if (context.is_object())
      for (const auto& [key, value] : context.items()) scopes_.back()[key] = Value::of(value);
  }

  std::string run(const Body& body) {
    std::string out;
    exec_body(body, out);
    return out;
  }

 private:
  using Scope = std::unordered_map<std::string, Value>;

  [[noreturn]] void fail_at(int32_t line, const std::string& message) const {
    fail("jinja: line " + std::to_string(line) + ": " + message);
  }

  void emit(std::string& out, std::string_view text, int32_t line) {
    if (static_cast<int64_t>(out.size() + text.size()) > limits_.max_output_bytes)
      fail_at(line, "output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    out += text;
  }
  void check_size(size_t size, int32_t line) const {
    if (static_cast<int64_t>(size) > limits_.max_output_bytes)
      fail_at(line, "a value exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  void count_iteration(int32_t line) {
    if (++num_iterations_ > limits_.max_loop_iterations)
      fail_at(line, "more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
  }

  const Value* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }
  Value* lookup_mutable(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  Flow exec_body(const Body& body, std::string& out) {
    for (const NodePtr& node : body) {
      Flow flow = exec(*node, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& node, std::string& out) {
    switch (node.kind) {
      case NodeKind::kText: emit(out, node.text, node.line); return Flow::kNormal;
      case NodeKind::kOutput: emit(out, to_str(eval(*node.expr)), node.line); return Flow::kNormal;
      case NodeKind::kIf:
        for (size_t i = 0; i < node.conditions.size(); ++i)
          if (truthy(eval(*node.conditions[i]))) return exec_body(node.bodies[i], out);
        if (node.has_else) return exec_body(node.bodies.back(), out);
        return Flow::kNormal;
      case NodeKind::kFor: exec_for(node, out); return Flow::kNormal;
      case NodeKind::kSet: assign(node.targets[0], eval(*node.expr), node.line); return Flow::kNormal;
      case NodeKind::kSetBlock: {
        std::string captured;
        exec_body(node.bodies[0], captured);
        assign(node.targets[0], Value::of(captured), node.line);
        return Flow::kNormal;
      }
      case NodeKind::kMacro: {
        Value macro;
        macro.kind = Value::Kind::kMacro;
        macro.macro = &node;
        scopes_.back()[node.targets[0]] = macro;
        return Flow::kNormal;
      }
      case NodeKind::kBreak:
      case NodeKind::kContinue:
        if (loop_depth_ == 0) fail_at(node.line, "'break' or 'continue' outside a loop");
        return node.kind == NodeKind::kBreak ? Flow::kBreak : Flow::kContinue;
    }
    return Flow::kNormal;
  }

  void assign(const std::string& target, Value value, int32_t line) {
    size_t dot = target.find('.');
    if (dot == std::string::npos) {
      scopes_.back()[target] = std::move(value);
      return;
    }
    // "set ns.x = ...": writes into the namespace object wherever it lives, which is how templates carry state
    // out of a loop body.
    Value* object = lookup_mutable(target.substr(0, dot));
    if (!object || !object->is_data() || !object->data.is_object())
      fail_at(line, "cannot assign to attribute of '" + target.substr(0, dot) + "': not a namespace");
    object->data[target.substr(dot + 1)] = value.is_data() ? value.data : Json();
  }

  std::vector<Json> iterable_items(const Value& v, int32_t line) {
    std::vector<Json> items;
    if (v.is_undefined()) return items;
    if (!v.is_data()) fail_at(line, "a function is not iterable");
    const Json& j = v.data;
    if (j.is_array()) {
      items.assign(j.begin(), j.end());
    } else if (j.is_object()) {
      for (const auto& [key, value] : j.items()) items.emplace_back(key);
    } else if (j.is_string()) {
      for (std::string_view c : utf8_chars(j.get_ref<const std::string&>())) items.emplace_back(std::string(c));
    } else {
      fail_at(line, "'" + type_name(v) + "' object is not iterable");
    }
    return items;
  }

  void exec_for(const Node& node, std::string& out) {
    std::vector<Json> items = iterable_items(eval(*node.expr), node.line);
    scopes_.emplace_back();
    ++loop_depth_;
    auto bind = [&](const Json& item) {
      if (node.targets.size() == 1) {
        scopes_.back()[node.targets[0]] = Value::of(item);
        return;
      }
      if (!item.is_array() || item.size() != node.targets.size())
        fail_at(node.line,
                "cannot unpack " + python_repr(item) + " into " + std::to_string(node.targets.size()) + " names");
      for (size_t i = 0; i < node.targets.size(); ++i) scopes_.back()[node.targets[i]] = Value::of(item[i]);
    };
    if (!node.conditions.empty()) {  // the loop filter runs before loop.* is known, as in Jinja
      std::vector<Json> kept;
      for (const Json& item : items) {
        count_iteration(node.line);
        bind(item);
        if (truthy(eval(*node.conditions[0]))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      count_iteration(node.line);
      scopes_.back().clear();
      bind(items[static_cast<size_t>(i)]);
      Json loop = Json::object();
      loop["index"] = i + 1;
      loop["index0"] = i;
      loop["revindex"] = length - i;
      loop["revindex0"] = length - i - 1;
      loop["first"] = i == 0;
      loop["last"] = i == length - 1;
      loop["length"] = length;
      scopes_.back()["loop"] = Value::of(std::move(loop));
      if (exec_body(node.bodies[0], out) == Flow::kBreak) break;
    }
    --loop_depth_;
    scopes_.pop_back();
    if (items.empty() && node.has_else) exec_body(node.bodies[1], out);
  }

  // Evaluating names and member chains by reference keeps `messages[i].role` from copying every message.
  const Json* eval_ref(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kName: {
        const Value* v = lookup(e.name);
        return v && v->is_data() ? &v->data : nullptr;
      }
      case ExprKind::kAttr: {
        const Json* object = eval_ref(*e.children[0]);
        if (!object || !object->is_object()) return nullptr;
        auto it = object->find(e.name);
        return it == object->end() ? nullptr : &*it;
      }
      case ExprKind::kIndex: {
        const Json* object = eval_ref(*e.children[0]);
        if (!object) return nullptr;
        Value key = eval(*e.children[1]);
        if (!key.is_data()) return nullptr;
        if (object->is_object() && key.data.is_string()) {
          auto it = object->find(key.data.get<std::string>());
          return it == object->end() ? nullptr : &*it;
        }
        if (object->is_array() && key.data.is_number_integer()) {
          int64_t idx = key.data.get<int64_t>();
          int64_t size = static_cast<int64_t>(object->size());
          if (idx < 0) idx += size;
          return idx >= 0 && idx < size ? &(*object)[static_cast<size_t>(idx)] : nullptr;
        }
        return nullptr;
      }
      default: return nullptr;
    }
  }

  Value get_attr(const Value& object, const std::string& name) {
    if (object.is_data() && object.data.is_object()) {
      auto it = object.data.find(name);
      if (it != object.data.end()) return Value::of(*it);
    }
    return Value();
  }

  Value get_item(const Value& object, const Value& key, int32_t line) {
    if (!object.is_data() || !key.is_data()) return Value();
    const Json& j = object.data;
    if (j.is_object()) {
      if (!key.data.is_string()) return Value();
      auto it = j.find(key.data.get<std::string>());
      return it == j.end() ? Value() : Value::of(*it);
    }
    if (j.is_array() || j.is_string()) {
      if (!key.data.is_number_integer()) fail_at(line, "indices must be integers, not " + type_name(key));
      int64_t idx = key.data.get<int64_t>();
      if (j.is_array()) {
        int64_t size = static_cast<int64_t>(j.size());
        if (idx < 0) idx += size;
        return idx >= 0 && idx < size ? Value::of(j[static_cast<size_t>(idx)]) : Value();
      }
      auto chars = utf8_chars(j.get_ref<const std::string&>());
      int64_t size = static_cast<int64_t>(chars.size());
      if (idx < 0) idx += size;
      return idx >= 0 && idx < size ? Value::of(std::string(chars[static_cast<size_t>(idx)])) : Value();
    }
    return Value();
  }

  Value slice(const Value& object, const Expr& e) {
    auto bound = [&](size_t child) -> std::optional<int64_t> {
      if (!e.children[child]) return std::nullopt;
      Value v = eval(*e.children[child]);
      if (v.is_data() && v.data.is_null()) return std::nullopt;
      if (!v.is_data() || !v.data.is_number_integer()) fail_at(e.line, "slice indices must be integers");
      return v.data.get<int64_t>();
    };
    std::optional<int64_t> start = bound(1), stop = bound(2), step_opt = bound(3);
    int64_t step = step_opt.value_or(1);
    if (step == 0) fail_at(e.line, "slice step cannot be zero");
    if (!object.is_data() || !(object.data.is_array() || object.data.is_string())) return Value();
    std::vector<std::string_view> chars;
    int64_t n;
    if (object.data.is_string()) {
      chars = utf8_chars(object.data.get_ref<const std::string&>());
      n = static_cast<int64_t>(chars.size());
    } else {
      n = static_cast<int64_t>(object.data.size());
    }
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback, int64_t lo, int64_t hi) {
      if (!v) return fallback;
      int64_t x = *v < 0 ? *v + n : *v;
      return std::clamp(x, lo, hi);
    };
    int64_t from = step > 0 ? clamp(start, 0, 0, n) : clamp(start, n - 1, -1, n - 1);
    int64_t to = step > 0 ? clamp(stop, n, 0, n) : clamp(stop, -1, -1, n - 1);
    Json list = Json::array();
    std::string text;
    for (int64_t i = from; step > 0 ? i < to : i > to; i += step) {
      if (object.data.is_string())
        text += chars[static_cast<size_t>(i)];
      else
        list.push_back(object.data[static_cast<size_t>(i)]);
    }
    return object.data.is_string() ? Value::of(text) : Value::of(std::move(list));
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral: return Value::of(e.literal);
      case ExprKind::kName: {
        if (const Value* v = lookup(e.name)) return *v;
        static const char* const kGlobals[] = {"raise_exception", "namespace", "range", "strftime_now", "dict"};
        for (const char* global : kGlobals) {
          if (e.name == global) {
            Value f;
            f.kind = Value::Kind::kFunction;
            f.function = global;
            return f;
          }
        }
        return Value();
      }
      case ExprKind::kList: {
        Json list = Json::array();
        for (const ExprPtr& item : e.children) {
          Value v = eval(*item);
          list.push_back(v.is_data() ? v.data : Json());
        }
        return Value::of(std::move(list));
      }
      case ExprKind::kDict: {
        Json dict = Json::object();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Value key = eval(*e.children[i]);
          Value value = eval(*e.children[i + 1]);
          if (!key.is_data() || !key.data.is_string()) fail_at(e.line, "dict keys must be strings");
          dict[key.data.get<std::string>()] = value.is_data() ? value.data : Json();
        }
        return Value::of(std::move(dict));
      }
      case ExprKind::kAttr:
      case ExprKind::kIndex: {
        if (const Json* ref = eval_ref(e)) return Value::of(*ref);
        Value object = eval(*e.children[0]);
        if (e.kind == ExprKind::kAttr) return get_attr(object, e.name);
        return get_item(object, eval(*e.children[1]), e.line);
      }
      case ExprKind::kSlice: return slice(eval(*e.children[0]), e);
      case ExprKind::kCall: return eval_call(e);
      case ExprKind::kFilter: return eval_filter(e);
      case ExprKind::kTest: {
        bool result = eval_test(e);
        return Value::of(e.negated ? !result : result);
      }
      case ExprKind::kUnary: {
        Value v = eval(*e.children[0]);
        if (e.name == "not") return Value::of(!truthy(v));
        if (!v.is_data() || !v.data.is_number()) fail_at(e.line, "bad operand type for unary " + e.name);
        if (e.name == "+") return v;
        if (v.data.is_number_float()) return Value::of(-v.data.get<double>());
        int64_t x = v.data.get<int64_t>();
        if (x == INT64_MIN) fail_at(e.line, "integer overflow");
        return Value::of(-x);
      }
      case ExprKind::kBinary: return eval_binary(e);
      case ExprKind::kTernary:
        if (truthy(eval(*e.children[0]))) return eval(*e.children[1]);
        return e.children[2] ? eval(*e.children[2]) : Value();
    }
    return Value();
  }

  static bool is_int(const Value& v) { return v.is_data() && v.data.is_number_integer(); }
  static bool is_num(const Value& v) { return v.is_data() && (v.data.is_number() || v.data.is_boolean()); }
  static double as_double(const Value& v) {
    return v.data.is_boolean() ? (v.data.get<bool>() ? 1.0 : 0.0) : v.data.get<double>();
  }
  static int64_t as_int(const Value& v) {
    return v.data.is_boolean() ? (v.data.get<bool>() ? 1 : 0) : v.data.get<int64_t>();
  }
  static bool is_str(const Value& v) { return v.is_data() && v.data.is_string(); }
  static const std::string& str(const Value& v) { return v.data.get_ref<const std::string&>(); }

  bool equals(const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (!a.is_data() || !b.is_data()) return false;
    if (is_num(a) && is_num(b) && (a.data.is_boolean() || b.data.is_boolean()))
      return as_double(a) == as_double(b);  // Python: True == 1
    return a.data == b.data;
  }

  bool contains(const Value& container, const Value& item, int32_t line) {
    if (!container.is_data()) return false;
    const Json& c = container.data;
    if (c.is_string()) {
      if (!is_str(item)) fail_at(line, "'in <string>' requires a string, not " + type_name(item));
      return str(container).find(str(item)) != std::string::npos;
    }
    if (c.is_array()) {
      for (const Json& x : c)
        if (equals(Value::of(x), item)) return true;
      return false;
    }
    if (c.is_object()) return is_str(item) && c.contains(str(item));
    return false;
  }

  Value arithmetic(const std::string& op, const Value& a, const Value& b, int32_t line) {
    if (op == "+") {
      if (is_str(a) && is_str(b)) {
        check_size(str(a).size() + str(b).size(), line);
        return Value::of(str(a) + str(b));
      }
      if (a.is_data() && b.is_data() && a.data.is_array() && b.data.is_array()) {
        check_size(a.data.size() + b.data.size(), line);
        Json list = a.data;
        for (const Json& x : b.data) list.push_back(x);
        return Value::of(std::move(list));
      }
    }
    if (op == "*" && ((is_str(a) && is_int(b)) || (is_int(a) && is_str(b)))) {
      const std::string& s = is_str(a) ? str(a) : str(b);
      int64_t times = std::max<int64_t>(0, is_int(a) ? as_int(a) : as_int(b));
      if (times > 0 && !s.empty() && times > limits_.max_output_bytes / static_cast<int64_t>(s.size()))
        fail_at(line, "a value exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += s;
      return Value::of(out);
    }
    if (!is_num(a) || !is_num(b))
      fail_at(line, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
    bool both_int = (is_int(a) || a.data.is_boolean()) && (is_int(b) || b.data.is_boolean());
    if (both_int && op != "/") {
      int64_t x = as_int(a), y = as_int(b), r = 0;
      bool overflow = false;
      if (op == "+")
        overflow = __builtin_add_overflow(x, y, &r);
      else if (op == "-")
        overflow = __builtin_sub_overflow(x, y, &r);
      else if (op == "*")
        overflow = __builtin_mul_overflow(x, y, &r);
      else if (op == "//" || op == "%") {
        if (y == 0) fail_at(line, "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) fail_at(line, "integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
          --q;
          m += y;
        }
        r = op == "//" ? q : m;
      } else if (op == "**") {
        if (y < 0) return Value::of(std::pow(static_cast<double>(x), static_cast<double>(y)));
        r = 1;
        for (int64_t i = 0; i < y && !overflow; ++i) overflow = __builtin_mul_overflow(r, x, &r);
      }
      if (overflow) fail_at(line, "integer overflow in " + op);
      return Value::of(r);
    }
    double x = as_double(a), y = as_double(b);
    if (op == "+") return Value::of(x + y);
    if (op == "-") return Value::of(x - y);
    if (op == "*") return Value::of(x * y);
    if (op == "**") return Value::of(std::pow(x, y));
    if (y == 0) fail_at(line, "division by zero");
    if (op == "/") return Value::of(x / y);
    if (op == "//") return Value::of(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value::of(m);
  }

  Value eval_binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.children[0]);
      return truthy(a) ? eval(*e.children[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*e.children[0]);
      return truthy(a) ? a : eval(*e.children[1]);
    }
    Value a = eval(*e.children[0]);
    Value b = eval(*e.children[1]);
    if (op == "==") return Value::of(equals(a, b));
    if (op == "!=") return Value::of(!equals(a, b));
    if (op == "in") return Value::of(contains(b, a, e.line));
    if (op == "not in") return Value::of(!contains(b, a, e.line));
    if (op == "~") {
      std::string s = to_str(a) + to_str(b);
      check_size(s.size(), e.line);
      return Value::of(std::move(s));
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int cmp;
      if (is_num(a) && is_num(b)) {
        double x = as_double(a), y = as_double(b);
        cmp = x < y ? -1 : x > y ? 1 : 0;
      } else if (is_str(a) && is_str(b)) {
        cmp = str(a).compare(str(b));
      } else {
        fail_at(e.line, "'" + op + "' not supported between '" + type_name(a) + "' and '" + type_name(b) + "'");
      }
      if (op == "<") return Value::of(cmp < 0);
      if (op == "<=") return Value::of(cmp <= 0);
      if (op == ">") return Value::of(cmp > 0);
      return Value::of(cmp >= 0);
    }
    return arithmetic(op, a, b, e.line);
  }

  struct Args {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
    // The argument at `idx` or named `name`, or null when absent.
    const Value* get(size_t idx, std::string_view name) const {
      for (const auto& [key, value] : keyword)
        if (key == name) return &value;
      return idx < positional.size() ? &positional[idx] : nullptr;
    }
  };

  Args eval_args(const Expr& e, size_t first_child) {
    Args args;
    for (size_t i = first_child; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i]));
    for (const auto& [key, value] : e.kwargs) args.keyword.emplace_back(key, eval(*value));
    return args;
  }

  const std::string& string_arg(const Args& args, size_t idx, std::string_view name, std::string_view method,
                                int32_t line) {
    const Value* v = args.get(idx, name);
    if (!v || !is_str(*v)) fail_at(line, std::string(method) + "() expects a string argument");
    return str(*v);
  }

  Value eval_call(const Expr& e) {
    const Expr& callee = *e.children[0];
    if (callee.kind == ExprKind::kAttr) {
      Value object = eval(*callee.children[0]);
      Args args = eval_args(e, 1);
      if (std::optional<Value> result = call_method(object, callee.name, args, e.line)) return *result;
      Value member = get_attr(object, callee.name);
      if (member.is_undefined())
        fail_at(e.line, "'" + type_name(object) + "' object has no method '" + callee.name + "'");
      return call_value(member, args, e.line);
    }
    Value function = eval(callee);
    return call_value(function, eval_args(e, 1), e.line);
  }

  Value call_value(const Value& f, const Args& args, int32_t line) {
    if (f.kind == Value::Kind::kMacro) return call_macro(*f.macro, args, line);
    if (f.kind != Value::Kind::kFunction) fail_at(line, "'" + type_name(f) + "' object is not callable");
    const std::string& name = f.function;
    if (name == "raise_exception") {
      const Value* message = args.get(0, "message");
      fail_at(line, "raise_exception: " + (message ? to_str(*message) : std::string("(no message)")));
    }
    if (name == "namespace" || name == "dict") {
      Json object = Json::object();
      if (const Value* init = args.positional.empty() ? nullptr : &args.positional[0])
        if (init->is_data() && init->data.is_object()) object = init->data;
      for (const auto& [key, value] : args.keyword) object[key] = value.is_data() ? value.data : Json();
      return Value::of(std::move(object));
    }
    if (name == "range") {
      int64_t start = 0, stop = 0, step = 1;
      for (const Value& v : args.positional)
        if (!is_int(v)) fail_at(line, "range() expects integers");
      if (args.positional.size() == 1) {
        stop = as_int(args.positional[0]);
      } else if (args.positional.size() >= 2) {
        start = as_int(args.positional[0]);
        stop = as_int(args.positional[1]);
        if (args.positional.size() >= 3) step = as_int(args.positional[2]);
      } else {
        fail_at(line, "range() expects 1 to 3 arguments");
      }
      if (step == 0) fail_at(line, "range() step must not be zero");
      Json list = Json::array();
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        count_iteration(line);
        list.push_back(i);
        if (__builtin_add_overflow(i, step, &i)) break;
        i -= step;
      }
      return Value::of(std::move(list));
    }
    if (name == "strftime_now") {
      const Value* format = args.get(0, "format");
      if (!format || !is_str(*format)) fail_at(line, "strftime_now() expects a format string");
      std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      char buf[256];
      size_t len = std::strftime(buf, sizeof(buf), str(*format).c_str(), &local);
      return Value::of(std::string(buf, len));
    }
    fail_at(line, "unknown function '" + name + "'");
  }

  Value call_macro(const Node& macro, const Args& args, int32_t line) {
    if (++call_depth_ > limits_.max_nesting_depth)
      fail_at(line, "macro calls nested deeper than " + std::to_string(limits_.max_nesting_depth));
    Scope scope;
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const Value* arg = args.get(i, macro.params[i]);
      if (arg)
        scope[macro.params[i]] = *arg;
      else if (macro.param_defaults[i])
        scope[macro.params[i]] = eval(*macro.param_defaults[i]);
      else
        scope[macro.params[i]] = Value();
    }
    scopes_.push_back(std::move(scope));
    int32_t saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    std::string out;
    exec_body(macro.bodies[0], out);
    loop_depth_ = saved_loop_depth;
    scopes_.pop_back();
    --call_depth_;
    return Value::of(std::move(out));
  }

  static Json pairs_of(const Json& object) {
    Json pairs = Json::array();
    for (const auto& [key, value] : object.items()) pairs.push_back(Json::array({key, value}));
    return pairs;
  }

  std::vector<std::string> python_split(const std::string& s, const Value* sep, int64_t max_split, int32_t line) {
    std::vector<std::string> parts;
    if (!sep || (sep->is_data() && sep->data.is_null())) {  // runs of whitespace, no empty parts
      size_t i = 0;
      while (true) {
        while (i < s.size() && is_space(s[i])) ++i;
        if (i >= s.size()) break;
        if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
          parts.push_back(python_strip(s.substr(i), nullptr, false, true));
          break;
        }
        size_t end = i;
        while (end < s.size() && !is_space(s[end])) ++end;
        parts.push_back(s.substr(i, end - i));
        i = end;
      }
      return parts;
    }
    if (!is_str(*sep) || str(*sep).empty()) fail_at(line, "split() separator must be a non-empty string");
    const std::string& d = str(*sep);
    size_t from = 0;
    while (true) {
      size_t at = s.find(d, from);
      if (at == std::string::npos || (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split)) {
        parts.push_back(s.substr(from));
        return parts;
      }
      parts.push_back(s.substr(from, at - from));
      from = at + d.size();
    }
  }

  static std::string ascii_upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string ascii_lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string capitalize(const std::string& s) {
    std::string out = ascii_lower(s);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
  }
  static std::string title(const std::string& s) {
    std::string out = s;
    bool word_start = true;
    for (char& c : out) {
      unsigned char u = static_cast<unsigned char>(c);
      if (std::isalpha(u)) {
        c = static_cast<char>(word_start ? std::toupper(u) : std::tolower(u));
        word_start = false;
      } else {
        word_start = true;
      }
    }
    return out;
  }
  std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                      int32_t line) {
    if (from.empty()) return s;
    std::string out;
    size_t pos = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
      size_t at = s.find(from, pos);
      if (at == std::string::npos) break;
      out.append(s, pos, at - pos);
      out += to;
      check_size(out.size(), line);
      pos = at + from.size();
    }
    out.append(s, pos);
    return out;
  }

  // The Python methods templates call on strings and dicts; nullopt when `name` is not one of them.
  std::optional<Value> call_method(const Value& object, const std::string& name, const Args& args, int32_t line) {
    if (is_str(object)) {
      const std::string& s = str(object);
      if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value::of(python_strip(s, args.get(0, "chars"), name != "rstrip", name != "lstrip"));
      if (name == "split") {
        const Value* max_split = args.get(1, "maxsplit");
        Json parts = Json::array();
        for (std::string& part :
             python_split(s, args.get(0, "sep"), max_split && is_int(*max_split) ? as_int(*max_split) : -1, line))
          parts.push_back(std::move(part));
        return Value::of(std::move(parts));
      }
      if (name == "startswith" || name == "endswith") {
        const Value* affix = args.get(0, "prefix");
        if (!affix || !affix->is_data()) fail_at(line, name + "() expects a string");
        std::vector<std::string> options;
        if (affix->data.is_string())
          options.push_back(str(*affix));
        else if (affix->data.is_array())
          for (const Json& x : affix->data)
            if (x.is_string()) options.push_back(x.get<std::string>());
        if (options.empty() && !affix->data.is_array()) fail_at(line, name + "() expects a string");
        for (const std::string& o : options)
          if (name == "startswith" ? s.starts_with(o) : s.ends_with(o)) return Value::of(true);
        return Value::of(false);
      }
      if (name == "upper") return Value::of(ascii_upper(s));
      if (name == "lower") return Value::of(ascii_lower(s));
      if (name == "capitalize") return Value::of(capitalize(s));
      if (name == "title") return Value::of(title(s));
      if (name == "replace") {
        const Value* count = args.get(2, "count");
        return Value::of(replace(s, string_arg(args, 0, "old", name, line), string_arg(args, 1, "new", name, line),
                                 count && is_int(*count) ? as_int(*count) : -1, line));
      }
      if (name == "find") {
        size_t at = s.find(string_arg(args, 0, "sub", name, line));
        return Value::of(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
      }
      if (name == "count") {
        const std::string& sub = string_arg(args, 0, "sub", name, line);
        int64_t n = 0;
        if (!sub.empty())
          for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value::of(n);
      }
      if (name == "join") {
        const Value* items = args.get(0, "iterable");
        std::string out;
        bool first = true;
        for (const Json& x : iterable_items(items ? *items : Value(), line)) {
          if (!first) out += s;
          first = false;
          out += to_str(Value::of(x));
          check_size(out.size(), line);
        }
        return Value::of(out);
      }
      return std::nullopt;
    }
    if (object.is_data() && object.data.is_object()) {
      const Json& d = object.data;
      if (name == "items") return Value::of(pairs_of(d));
      if (name == "keys" || name == "values") {
        Json list = Json::array();
        for (const auto& [key, value] : d.items()) list.push_back(name == "keys" ? Json(key) : value);
        return Value::of(std::move(list));
      }
      if (name == "get") {
        const Value* key = args.get(0, "key");
        if (key && is_str(*key)) {
          auto it = d.find(str(*key));
          if (it != d.end()) return Value::of(*it);
        }
        const Value* fallback = args.get(1, "default");
        return fallback ? *fallback : Value::of(nullptr);
      }
    }
    return std::nullopt;
  }

  int64_t length_of(const Value& v, int32_t line) {
    if (v.is_undefined()) return 0;
    if (v.is_data()) {
      if (v.data.is_string()) return static_cast<int64_t>(utf8_chars(str(v)).size());
      if (v.data.is_array() || v.data.is_object()) return static_cast<int64_t>(v.data.size());
    }
    fail_at(line, "object of type '" + type_name(v) + "' has no length");
  }

  Value attribute_of(const Json& item, const std::string& path) {
    Value v = Value::of(item);
    size_t from = 0;
    while (true) {  // "a.b" walks nested dicts, as Jinja's attribute= does
      size_t dot = path.find('.', from);
      v = get_attr(v, path.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
      if (dot == std::string::npos) return v;
      from = dot + 1;
    }
  }

  Value eval_filter(const Expr& e) {
    Value input = eval(*e.children[0]);
    Args args = eval_args(e, 1);
    return apply_filter(e.name, input, args, e.line);
  }

  Value apply_filter(const std::string& name, const Value& input, const Args& args, int32_t line) {
    if (name == "safe" || name == "e" || name == "escape") return input;  // transformers renders without autoescape
    if (name == "trim") return Value::of(python_strip(to_str(input), args.get(0, "chars"), true, true));
    if (name == "string") return Value::of(to_str(input));
    if (name == "upper") return Value::of(ascii_upper(to_str(input)));
    if (name == "lower") return Value::of(ascii_lower(to_str(input)));
    if (name == "capitalize") return Value::of(capitalize(to_str(input)));
    if (name == "title") return Value::of(title(to_str(input)));
    if (name == "length" || name == "count") return Value::of(length_of(input, line));
    if (name == "tojson") {
      const Value* indent = args.get(0, "indent");
      std::string out;
      append_json(out, input.is_data() ? input.data : Json(),
                  indent && is_int(*indent) ? static_cast<int32_t>(std::clamp<int64_t>(as_int(*indent), 0, 64)) : -1,
                  0);
      check_size(out.size(), line);
      return Value::of(std::move(out));
    }
    if (name == "default" || name == "d") {
      const Value* fallback = args.get(0, "default_value");
      const Value* boolean = args.get(1, "boolean");
      bool use_fallback = input.is_undefined() || (boolean && truthy(*boolean) && !truthy(input));
      if (!use_fallback) return input;
      return fallback ? *fallback : Value::of("");
    }
    if (name == "first" || name == "last") {
      std::vector<Json> items = iterable_items(input, line);
      if (items.empty()) return Value();
      return Value::of(name == "first" ? items.front() : items.back());
    }
    if (name == "join") {
      const Value* separator = args.get(0, "d");
      const Value* attribute = args.get(1, "attribute");
      std::string out;
      bool first = true;
      for (const Json& item : iterable_items(input, line)) {
        if (!first && separator) out += to_str(*separator);
        first = false;
        out += to_str(attribute && is_str(*attribute) ? attribute_of(item, str(*attribute)) : Value::of(item));
        check_size(out.size(), line);
      }
      return Value::of(std::move(out));
    }
    if (name == "replace") {
      const Value* count = args.get(2, "count");
      return Value::of(replace(to_str(input), string_arg(args, 0, "old", name, line),
                               string_arg(args, 1, "new", name, line), count && is_int(*count) ? as_int(*count) : -1,
                               line));
    }
    if (name == "int") {
      if (is_num(input))
        return Value::of(input.data.is_number_float() ? static_cast<int64_t>(as_double(input)) : as_int(input));
      if (is_str(input)) {
        std::string s = python_strip(str(input), nullptr, true, true);
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && ptr == s.data() + s.size()) return Value::of(v);
      }
      const Value* fallback = args.get(0, "default");
      return fallback ? *fallback : Value::of(0);
    }
    if (name == "float") {
      if (is_num(input)) return Value::of(as_double(input));
      if (is_str(input)) {
        char* end = nullptr;
        double v = std::strtod(str(input).c_str(), &end);
        if (end && *end == '\0' && !str(input).empty()) return Value::of(v);
      }
      return Value::of(0.0);
    }
    if (name == "abs") {
      if (is_int(input)) {
        int64_t v = as_int(input);
        if (v == INT64_MIN) fail_at(line, "integer overflow");
        return Value::of(v < 0 ? -v : v);
      }
      if (is_num(input)) return Value::of(std::fabs(as_double(input)));
      fail_at(line, "abs() expects a number");
    }
    if (name == "list") {
      Json list = Json::array();
      for (Json& item : iterable_items(input, line)) list.push_back(std::move(item));
      return Value::of(std::move(list));
    }
    if (name == "items") {
      if (input.is_undefined()) return Value::of(Json::array());
      if (!input.is_data() || !input.data.is_object()) fail_at(line, "items expects a mapping");
      return Value::of(pairs_of(input.data));
    }
    if (name == "reverse") {
      if (is_str(input)) {
        auto chars = utf8_chars(str(input));
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value::of(out);
      }
      std::vector<Json> items = iterable_items(input, line);
      std::reverse(items.begin(), items.end());
      return Value::of(Json(items));
    }
    if (name == "unique") {
      Json list = Json::array();
      for (const Json& item : iterable_items(input, line)) {
        bool seen = false;
        for (const Json& x : list) seen = seen || x == item;
        if (!seen) list.push_back(item);
      }
      return Value::of(std::move(list));
    }
    if (name == "map") {
      const Value* attribute = args.get(99, "attribute");
      Json list = Json::array();
      for (const Json& item : iterable_items(input, line)) {
        count_iteration(line);
        Value mapped;
        if (attribute && is_str(*attribute)) {
          mapped = attribute_of(item, str(*attribute));
          if (mapped.is_undefined())
            if (const Value* fallback = args.get(99, "default")) mapped = *fallback;
        } else if (!args.positional.empty() && is_str(args.positional[0])) {
          Args rest;
          rest.positional.assign(args.positional.begin() + 1, args.positional.end());
          mapped = apply_filter(str(args.positional[0]), Value::of(item), rest, line);
        } else {
          fail_at(line, "map() expects a filter name or attribute=");
        }
        list.push_back(mapped.is_data() ? mapped.data : Json());
      }
      return Value::of(std::move(list));
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
      bool by_attribute = name.ends_with("attr");
      bool keep_when = name.starts_with("select");
      size_t test_idx = by_attribute ? 1 : 0;
      Json list = Json::array();
      for (const Json& item : iterable_items(input, line)) {
        count_iteration(line);
        Value subject = Value::of(item);
        if (by_attribute) {
          if (args.positional.empty() || !is_str(args.positional[0])) fail_at(line, name + "() expects an attribute");
          subject = attribute_of(item, str(args.positional[0]));
        }
        bool passes;
        if (args.positional.size() > test_idx) {
          if (!is_str(args.positional[test_idx])) fail_at(line, name + "() expects a test name");
          std::vector<Value> test_args(args.positional.begin() + static_cast<std::ptrdiff_t>(test_idx) + 1,
                                       args.positional.end());
          passes = apply_test(str(args.positional[test_idx]), subject, test_args, line);
        } else {
          passes = truthy(subject);
        }
        if (passes == keep_when) list.push_back(item);
      }
      return Value::of(std::move(list));
    }
    if (name == "dictsort") {
      if (!input.is_data() || !input.data.is_object()) fail_at(line, "dictsort expects a mapping");
      std::vector<std::pair<std::string, Json>> entries;
      for (const auto& [key, value] : input.data.items()) entries.emplace_back(key, value);
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      Json pairs = Json::array();
      for (auto& [key, value] : entries) pairs.push_back(Json::array({key, value}));
      return Value::of(std::move(pairs));
    }
    if (name == "indent") {
      const Value* width_arg = args.get(0, "width");
      int64_t width = width_arg && is_int(*width_arg) ? std::clamp<int64_t>(as_int(*width_arg), 0, 256) : 4;
      const Value* first_arg = args.get(1, "first");
      std::string pad(static_cast<size_t>(width), ' ');
      std::string s = to_str(input), out;
      if (first_arg && truthy(*first_arg)) out += pad;
      for (size_t i = 0; i < s.size(); ++i) {
        out += s[i];
        if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') out += pad;
      }
      check_size(out.size(), line);
      return Value::of(std::move(out));
    }
    fail_at(line, "unknown filter '" + name + "'");
  }

  bool eval_test(const Expr& e) {
    Value subject = eval(*e.children[0]);
    std::vector<Value> args;
    for (size_t i = 1; i < e.children.size(); ++i) args.push_back(eval(*e.children[i]));
    return apply_test(e.name, subject, args, e.line);
  }

  bool apply_test(const std::string& name, const Value& v, const std::vector<Value>& args, int32_t line) {
    const Json* j = v.is_data() ? &v.data : nullptr;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return j && j->is_null();
    if (name == "string") return j && j->is_string();
    if (name == "number") return j && j->is_number();
    if (name == "integer") return j && j->is_number_integer();
    if (name == "float") return j && j->is_number_float();
    if (name == "boolean") return j && j->is_boolean();
    if (name == "true") return j && j->is_boolean() && j->get<bool>();
    if (name == "false") return j && j->is_boolean() && !j->get<bool>();
    if (name == "mapping") return j && j->is_object();
    if (name == "iterable") return j && (j->is_array() || j->is_object() || j->is_string());
    if (name == "sequence") return j && (j->is_array() || j->is_object() || j->is_string());
    if (name == "callable") return v.kind == Value::Kind::kFunction || v.kind == Value::Kind::kMacro;
    if (name == "lower") return j && j->is_string() && ascii_lower(j->get<std::string>()) == j->get<std::string>();
    if (name == "upper") return j && j->is_string() && ascii_upper(j->get<std::string>()) == j->get<std::string>();
    if (name == "even" || name == "odd") {
      if (!is_int(v)) fail_at(line, "'" + name + "' test expects an integer");
      return (as_int(v) % 2 == 0) == (name == "even");
    }
    if (args.empty()) fail_at(line, "unknown test '" + name + "' (or it needs an argument)");
    const Value& arg = args[0];
    if (name == "divisibleby") {
      if (!is_int(v) || !is_int(arg) || as_int(arg) == 0) fail_at(line, "divisibleby expects non-zero integers");
      return as_int(arg) == -1 || as_int(v) % as_int(arg) == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") return equals(v, arg);
    if (name == "ne" || name == "!=") return !equals(v, arg);
    if (name == "in") return contains(arg, v, line);
    if (name == "lt" || name == "gt" || name == "le" || name == "ge") {
      if (!is_num(v) || !is_num(arg)) fail_at(line, "'" + name + "' test expects numbers");
      double x = as_double(v), y = as_double(arg);
      return name == "lt" ? x < y : name == "gt" ? x > y : name == "le" ? x <= y : x >= y;
    }
    fail_at(line, "unknown test '" + name + "'");
  }

  const JinjaLimits& limits_;
  std::vector<Scope> scopes_;
  int64_t num_iterations_ = 0;
  int32_t loop_depth_ = 0;
  int32_t call_depth_ = 0;
};

}  // namespace jinja

Result<JinjaTemplate> JinjaTemplate::parse(std::string_view source, const JinjaOptions& options) {
  try {
    jinja::Lexer lexer(source, options);
    jinja::Parser parser(lexer.tokenize(), options.limits.max_nesting_depth);
    auto program = std::make_shared<jinja::Program>();
    program->body = parser.parse_template();
    program->limits = options.limits;
    return JinjaTemplate(std::move(program));
  } catch (const jinja::JinjaError& e) {
    return make_error(e.message, StatusCode::kInvalidArgument);
  } catch (const std::exception& e) {
    return make_error(std::string("jinja: ") + e.what(), StatusCode::kInvalidArgument);
  }
}

Result<std::string> JinjaTemplate::render(const nlohmann::ordered_json& context) const {
  try {
    jinja::Renderer renderer(*program_, context);
    return renderer.run(program_->body);
  } catch (const jinja::JinjaError& e) {
    return make_error(e.message, StatusCode::kInvalidArgument);
  } catch (const std::exception& e) {  // nlohmann::json type errors, bad_alloc: never past this line
    return make_error(std::string("jinja: ") + e.what(), StatusCode::kInvalidArgument);
  }
}

}  // namespace pagoda
