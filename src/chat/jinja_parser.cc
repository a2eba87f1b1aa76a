// Jinja parser: statements (if, for, set, macro, break, continue) and expressions, each node stamped with its line
// so runtime errors can say where.
#include "chat/jinja_parser.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace pagoda::jinja {
namespace {

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
    } else if (k == "generation") {
      node->kind = NodeKind::kGeneration;
      expect_kind(TokenKind::kBlockClose, "'%}'");
      std::string end_tag;
      node->bodies.push_back(parse_body({"endgeneration"}, &end_tag));
      expect_kind(TokenKind::kBlockClose, "'%}'");
    } else if (k == "filter") {
      node->kind = NodeKind::kFilterBlock;
      auto e = make(ExprKind::kFilter, peek());
      e->name = expect_identifier();
      e->children.push_back(make(ExprKind::kLiteral, keyword));  // the body's text goes here
      if (accept_op("(")) parse_call_args(*e);
      node->expr = checked(std::move(e));
      expect_kind(TokenKind::kBlockClose, "'%}'");
      std::string end_tag;
      node->bodies.push_back(parse_body({"endfilter"}, &end_tag));
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

}  // namespace

Body parse_tokens(std::vector<Token> tokens, int32_t max_depth) {
  return Parser(std::move(tokens), max_depth).parse_template();
}

}  // namespace pagoda::jinja
