// Jinja syntax: the error every stage throws internally (JinjaTemplate's entry points turn it into a Status),
// the tokens the lexer makes and the syntax tree the parser builds and the renderer walks. A tree is immutable
// once built; its depth is bounded by JinjaLimits::max_nesting_depth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/jinja_template.h"

namespace pagoda::jinja {

using Json = nlohmann::ordered_json;

struct JinjaError {
  std::string message;  // "jinja: line 3, col 7: ..." or "jinja: line 3: ..."
  StatusCode code = StatusCode::kInvalidArgument;  // kLimitExceeded, kCancelled: the render budget's errors
};

[[noreturn]] inline void fail(std::string message) { throw JinjaError{std::move(message)}; }

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

enum class TokenKind { kText, kExprOpen, kExprClose, kBlockOpen, kBlockClose, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  TokenKind kind;
  std::string text;  // kText: the literal text; kName/kOp: the spelling; kString: the decoded value
  int64_t int_value = 0;
  double float_value = 0;
  int32_t line = 1;
  int32_t col = 1;
};

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

// kGeneration: transformers' {% generation %} block (marks the assistant's tokens for training masks): its body
// renders as written. kFilterBlock: {% filter name(args) %}: the body's text through the filter `expr` (a kFilter
// expression whose input, children[0], is a placeholder).
enum class NodeKind { kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue, kGeneration, kFilterBlock };

struct Node {
  NodeKind kind;
  int32_t line = 0;
  std::string text;                     // kText
  ExprPtr expr;                         // kOutput, kSet value, kFor iterable
  std::vector<ExprPtr> conditions;      // kIf: one per branch; kFor: [filter] when present
  std::vector<Body> bodies;  // kIf: one per branch (+ else); kFor: body (+ else); kSetBlock/kMacro/kGeneration/
                             // kFilterBlock: body
  std::vector<std::string> targets;     // kFor / kSet: names ("ns.x" for attribute assignment); kMacro: name
  std::vector<std::string> params;      // kMacro parameter names
  std::vector<ExprPtr> param_defaults;  // kMacro: one per param, null when none
  bool has_else = false;
};

struct Program {
  Body body;
  JinjaLimits limits;
};

}  // namespace pagoda::jinja
