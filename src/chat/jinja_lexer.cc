// Jinja lexer: one pass over the source; text runs and tags alternate, and inside a tag names, numbers, string
// literals (Python escapes) and operators.
#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>

namespace pagoda::jinja {
namespace {

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
        lstrip_line(text, tag);
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

  // lstrip_blocks: remove the spaces and tabs between the start of the line and a block tag. Whether the tag
  // starts a line is a question about the source, not about the (possibly already trimmed) text before it.
  void lstrip_line(std::string& text, size_t tag_offset) const {
    size_t line_start = tag_offset;
    while (line_start > 0 && (src_[line_start - 1] == ' ' || src_[line_start - 1] == '\t')) --line_start;
    if (line_start > 0 && src_[line_start - 1] != '\n') return;
    size_t keep = text.find_last_not_of(" \t");
    text.erase(keep == std::string::npos ? 0 : keep + 1);
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

}  // namespace

std::vector<Token> tokenize(std::string_view source, const JinjaOptions& options) {
  return Lexer(source, options).tokenize();
}

}  // namespace pagoda::jinja
