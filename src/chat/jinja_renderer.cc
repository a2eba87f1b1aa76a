// Jinja renderer: a stack of scopes (the context at the bottom; a for body or macro call pushes one), the
// statements, and the expressions with the filters, tests, methods and globals chat templates use. Every
// statement and expression is a step of the RenderBudget and every value built or copied is charged to it, so a
// render ends (with an error) within its limits whatever the template and context.
#include "chat/jinja_renderer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <unordered_map>
#include <vector>

#include "chat/jinja_budget.h"
#include "chat/jinja_value.h"
#include "core/html_escape.h"

namespace pagoda::jinja {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

// The loop dict of one iteration without previtem/nextitem: 7 small entries (keys, values and the map's slots).
constexpr int64_t kLoopBytes = 512;

// The first occurrence of `needle` in `haystack` at or after `from`, or npos. glibc's memmem is linear in the
// worst case; std::string::find is not (a 100 KB needle against 8 MB of text took 30 s).
size_t find_text(std::string_view haystack, std::string_view needle, size_t from = 0) {
  if (from > haystack.size()) return std::string::npos;
  if (needle.empty()) return from;
  const void* at = memmem(haystack.data() + from, haystack.size() - from, needle.data(), needle.size());
  return at == nullptr ? std::string::npos : size_t(static_cast<const char*>(at) - haystack.data());
}

// Python's len() of a str: its UTF-8 characters (a stray continuation byte counts as one, as utf8_chars does).
int64_t utf8_length(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    i += std::min(len, s.size() - i);
    ++n;
  }
  return n;
}

// Character `idx` (0 <= idx < utf8_length(s)) of `s`, found without building the whole character list.
std::string_view utf8_char_at(std::string_view s, int64_t idx) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    len = std::min(len, s.size() - i);
    if (idx-- == 0) return s.substr(i, len);
    i += len;
  }
  return {};
}

class Renderer {
 public:
  Renderer(const Program& program, const Json& context, const JinjaShouldStop& should_stop)
      : limits_(program.limits), budget_(program.limits, should_stop) {
    // Charged (and its depth checked, without recursion) before the copy, which recurses.
    budget_.charge_value(context, 0);
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

  [[noreturn]] void fail_limit(int32_t line, const std::string& message) const {
    throw JinjaError{"jinja: line " + std::to_string(line) + ": " + message, StatusCode::kLimitExceeded};
  }

  void emit(std::string& out, std::string_view text, int32_t line) {
    if (static_cast<int64_t>(out.size() + text.size()) > limits_.max_output_bytes)
      fail_limit(line, "output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    budget_.charge_bytes(static_cast<int64_t>(text.size()), line);
    out += text;
  }
  void check_size(size_t size, int32_t line) const {
    if (static_cast<int64_t>(size) > limits_.max_output_bytes)
      fail_limit(line, "a value exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  void count_iteration(int32_t line) {
    if (++num_iterations_ > limits_.max_loop_iterations)
      fail_limit(line, "more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
    budget_.step(line);
  }
  // A dict's key: nlohmann's ordered_map finds (and inserts) by a linear scan, so each lookup costs steps in
  // proportion to the dict's size.
  Json::const_iterator find_key(const Json& object, const std::string& key, int32_t line) {
    budget_.step(line, static_cast<int64_t>(object.size() / 16));
    return object.find(key);
  }
  void set_key(Json& object, const std::string& key, Json value, int32_t line) {
    budget_.step(line, static_cast<int64_t>(object.size() / 16));
    object[key] = std::move(value);
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
    BudgetLevel level(budget_, node.line);
    budget_.step(node.line);
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
      case NodeKind::kGeneration: return exec_body(node.bodies[0], out);
      case NodeKind::kFilterBlock: {
        std::string captured;
        exec_body(node.bodies[0], captured);
        const Value filtered =
            apply_filter(node.expr->name, Value::of(std::move(captured)), eval_args(*node.expr, 1), node.line);
        emit(out, to_str(filtered), node.line);
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
    set_key(object->data, target.substr(dot + 1), value.is_data() ? std::move(value.data) : Json(), line);
  }

  // A copy of each item (charged: a string's characters are one small string each).
  std::vector<Json> iterable_items(const Value& v, int32_t line) {
    std::vector<Json> items;
    if (v.is_undefined()) return items;
    if (!v.is_data()) fail_at(line, "a function is not iterable");
    const Json& j = v.data;
    if (j.is_array()) {
      budget_.charge_value(j, line);
      items.assign(j.begin(), j.end());
    } else if (j.is_object()) {
      budget_.charge_value(j, line);
      for (const auto& [key, value] : j.items()) items.push_back(dict_key_value(key));
    } else if (j.is_string()) {
      const std::string& s = j.get_ref<const std::string&>();
      budget_.charge_bytes(static_cast<int64_t>(s.size()) * 72, line);  // item + string + the view below, each
      for (std::string_view c : utf8_chars(s)) items.emplace_back(std::string(c));
    } else {
      fail_at(line, "'" + type_name(v) + "' object is not iterable");
    }
    return items;
  }

  void exec_for(const Node& node, std::string& out) {
    std::vector<Json> items = iterable_items(eval(*node.expr), node.line);
    // Each item's footprint, measured once: the loop copies an item up to three times (into its target, as
    // loop.previtem and as loop.nextitem), and each copy is charged.
    std::vector<int64_t> item_bytes(items.size());
    for (size_t i = 0; i < items.size(); ++i)
      item_bytes[i] = json_footprint(items[i], INT64_MAX, limits_.max_value_depth).bytes;
    scopes_.emplace_back();
    ++loop_depth_;
    auto bind = [&](size_t idx) {
      const Json& item = items[idx];
      budget_.charge_bytes(item_bytes[idx], node.line);
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
      std::vector<int64_t> kept_bytes;
      for (size_t idx = 0; idx < items.size(); ++idx) {
        count_iteration(node.line);
        bind(idx);
        if (truthy(eval(*node.conditions[0]))) {
          kept.push_back(std::move(items[idx]));  // the target holds its own copy
          kept_bytes.push_back(item_bytes[idx]);
        }
      }
      items = std::move(kept);
      item_bytes = std::move(kept_bytes);
    }
    const int64_t length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      count_iteration(node.line);
      scopes_.back().clear();
      bind(static_cast<size_t>(i));
      Json loop = Json::object();
      loop["index"] = i + 1;
      loop["index0"] = i;
      loop["revindex"] = length - i;
      loop["revindex0"] = length - i - 1;
      loop["first"] = i == 0;
      loop["last"] = i == length - 1;
      loop["length"] = length;
      // Absent at the ends, so that `loop.previtem is defined` and `if loop.previtem` both work as in Jinja.
      int64_t loop_bytes = kLoopBytes;
      if (i > 0) {
        loop["previtem"] = items[static_cast<size_t>(i - 1)];
        loop_bytes += item_bytes[static_cast<size_t>(i - 1)];
      }
      if (i + 1 < length) {
        loop["nextitem"] = items[static_cast<size_t>(i + 1)];
        loop_bytes += item_bytes[static_cast<size_t>(i + 1)];
      }
      budget_.charge_bytes(loop_bytes, node.line);
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
        auto it = find_key(*object, e.name, e.line);
        return it == object->end() ? nullptr : &*it;
      }
      case ExprKind::kIndex: {
        const Json* object = eval_ref(*e.children[0]);
        if (!object) return nullptr;
        Value key = eval(*e.children[1]);
        if (!key.is_data()) return nullptr;
        if (object->is_object() && key.data.is_string()) {
          auto it = find_key(*object, key.data.get_ref<const std::string&>(), e.line);
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

  Value get_attr(const Value& object, const std::string& name, int32_t line) {
    if (object.is_data() && object.data.is_object()) {
      auto it = find_key(object.data, name, line);
      if (it != object.data.end()) return Value::of(*it);
    }
    return Value();
  }

  Value get_item(const Value& object, const Value& key, int32_t line) {
    if (!object.is_data() || !key.is_data()) return Value();
    const Json& j = object.data;
    if (j.is_object()) {
      if (key.data.is_number_integer()) {  // an integer key of a dict literal (see kDict)
        auto it = find_key(j, int_dict_key(key.data.get<int64_t>()), line);
        return it == j.end() ? Value() : Value::of(*it);
      }
      if (!key.data.is_string()) return Value();
      auto it = find_key(j, key.data.get_ref<const std::string&>(), line);
      return it == j.end() ? Value() : Value::of(*it);
    }
    if (j.is_array() || j.is_string()) {
      if (!key.data.is_number_integer()) fail_at(line, "indices must be integers, not " + type_name(key));
      int64_t idx = as_int(key, line);
      if (j.is_array()) {
        int64_t size = static_cast<int64_t>(j.size());
        if (idx < 0) idx += size;
        return idx >= 0 && idx < size ? Value::of(j[static_cast<size_t>(idx)]) : Value();
      }
      const std::string& s = j.get_ref<const std::string&>();
      const int64_t size = utf8_length(s);
      if (idx < 0) idx += size;
      if (idx < 0 || idx >= size) return Value();
      return Value::of(std::string(utf8_char_at(s, idx)));
    }
    return Value();
  }

  Value slice(const Value& object, const Expr& e) {
    auto bound = [&](size_t child) -> std::optional<int64_t> {
      if (!e.children[child]) return std::nullopt;
      Value v = eval(*e.children[child]);
      if (v.is_data() && v.data.is_null()) return std::nullopt;
      if (!v.is_data() || !v.data.is_number_integer()) fail_at(e.line, "slice indices must be integers");
      return as_int(v, e.line);
    };
    std::optional<int64_t> start = bound(1), stop = bound(2), step_opt = bound(3);
    int64_t step = step_opt.value_or(1);
    if (step == 0) fail_at(e.line, "slice step cannot be zero");
    if (!object.is_data() || !(object.data.is_array() || object.data.is_string())) return Value();
    std::vector<std::string_view> chars;
    int64_t n;
    if (object.data.is_string()) {
      const std::string& s = object.data.get_ref<const std::string&>();
      budget_.charge_bytes(static_cast<int64_t>(s.size() * sizeof(std::string_view)), e.line);
      chars = utf8_chars(s);
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

  // Every expression is a step and a level of nesting, and the value it yields (built or copied) is charged.
  Value eval(const Expr& e) {
    BudgetLevel level(budget_, e.line);
    budget_.step(e.line);
    Value v = eval_node(e);
    if (v.is_data()) budget_.charge_value(v.data, e.line);
    return v;
  }

  Value eval_node(const Expr& e) {
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
          list.push_back(v.is_data() ? std::move(v.data) : Json());
        }
        return Value::of(std::move(list));
      }
      case ExprKind::kDict: {
        Json dict = Json::object();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Value key = eval(*e.children[i]);
          Value value = eval(*e.children[i + 1]);
          // Python dicts take any hashable key; templates use strings and, for lookup tables, integers (stored
          // marked, jinja_value.h's int_dict_key; an integer index into a dict looks that key up, get_item).
          if (!key.is_data() || !(key.data.is_string() || key.data.is_number_integer()))
            fail_at(e.line, "dict keys must be strings or integers");
          const std::string key_text =
              key.data.is_string() ? key.data.get<std::string>() : int_dict_key(key.data.get<int64_t>());
          set_key(dict, key_text, value.is_data() ? std::move(value.data) : Json(), e.line);
        }
        return Value::of(std::move(dict));
      }
      case ExprKind::kAttr:
      case ExprKind::kIndex: {
        if (const Json* ref = eval_ref(e)) return Value::of(*ref);
        Value object = eval(*e.children[0]);
        if (e.kind == ExprKind::kAttr) return get_attr(object, e.name, e.line);
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
        int64_t x = as_int(v, e.line);
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
  // An integer (or bool) value as int64; a context's unsigned integer beyond int64 is an error, not a wrap.
  int64_t as_int(const Value& v, int32_t line) const {
    if (v.data.is_boolean()) return v.data.get<bool>() ? 1 : 0;
    if (v.data.is_number_unsigned() && v.data.get<uint64_t>() > uint64_t(INT64_MAX))
      fail_at(line, "integer " + std::to_string(v.data.get<uint64_t>()) + " is too large");
    return v.data.get<int64_t>();
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

  // equals() of a list element and a value, without copying the element into a Value.
  static bool equals_data(const Json& x, const Value& item) {
    if (!item.is_data()) return false;
    if ((x.is_number() || x.is_boolean()) && is_num(item) && (x.is_boolean() || item.data.is_boolean())) {
      const double a = x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>();
      return a == as_double(item);  // Python: True == 1
    }
    return x == item.data;
  }

  bool contains(const Value& container, const Value& item, int32_t line) {
    if (!container.is_data()) return false;
    const Json& c = container.data;
    if (c.is_string()) {
      if (!is_str(item)) fail_at(line, "'in <string>' requires a string, not " + type_name(item));
      return find_text(str(container), str(item)) != std::string::npos;
    }
    if (c.is_array()) {
      budget_.step(line, static_cast<int64_t>(c.size()));
      for (const Json& x : c)
        if (equals_data(x, item)) return true;
      return false;
    }
    if (c.is_object()) {
      if (is_int(item)) return find_key(c, int_dict_key(as_int(item, line)), line) != c.end();
      return is_str(item) && find_key(c, str(item), line) != c.end();
    }
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
      const int64_t times = std::max<int64_t>(0, is_int(a) ? as_int(a, line) : as_int(b, line));
      if (s.empty() || times == 0) return Value::of("");  // '' * 10**18 is '', at once
      if (times > limits_.max_output_bytes / static_cast<int64_t>(s.size()))
        fail_limit(line, "a value exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
      budget_.charge_bytes(times * static_cast<int64_t>(s.size()), line);
      std::string out;
      out.reserve(static_cast<size_t>(times) * s.size());
      for (int64_t i = 0; i < times; ++i) out += s;
      return Value::of(std::move(out));
    }
    if (!is_num(a) || !is_num(b))
      fail_at(line, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
    bool both_int = (is_int(a) || a.data.is_boolean()) && (is_int(b) || b.data.is_boolean());
    if (both_int && op != "/") {
      int64_t x = as_int(a, line), y = as_int(b, line), r = 0;
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
        // By squaring: 1 ** 9223372036854775807 is 64 multiplications, not 2^63.
        r = 1;
        int64_t base = x;
        for (int64_t e = y; e > 0 && !overflow; e >>= 1) {
          if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
          if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
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
      Value member = get_attr(object, callee.name, e.line);
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
      for (const auto& [key, value] : args.keyword) set_key(object, key, value.is_data() ? value.data : Json(), line);
      return Value::of(std::move(object));
    }
    if (name == "range") {
      int64_t start = 0, stop = 0, step = 1;
      for (const Value& v : args.positional)
        if (!is_int(v)) fail_at(line, "range() expects integers");
      if (args.positional.size() == 1) {
        stop = as_int(args.positional[0], line);
      } else if (args.positional.size() >= 2) {
        start = as_int(args.positional[0], line);
        stop = as_int(args.positional[1], line);
        if (args.positional.size() >= 3) step = as_int(args.positional[2], line);
      } else {
        fail_at(line, "range() expects 1 to 3 arguments");
      }
      if (step == 0) fail_at(line, "range() step must not be zero");
      Json list = Json::array();
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        count_iteration(line);
        budget_.charge_bytes(16, line);
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
    if (++call_depth_ > limits_.max_call_depth)
      fail_at(line, "macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
    Scope scope;
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const Value* arg = args.get(i, macro.params[i]);
      if (arg && arg->is_data()) budget_.charge_value(arg->data, line);  // the copy below
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
    for (const auto& [key, value] : object.items()) pairs.push_back(Json::array({dict_key_value(key), value}));
    return pairs;
  }

  // The parts as a JSON list, each charged as it is made ("a,a,a..." of 16 MB is 8 million small strings).
  Json python_split(const std::string& s, const Value* sep, int64_t max_split, int32_t line) {
    Json parts = Json::array();
    auto add = [&](std::string part) {
      budget_.charge_bytes(static_cast<int64_t>(part.size()) + 48, line);
      parts.push_back(std::move(part));
    };
    if (!sep || (sep->is_data() && sep->data.is_null())) {  // runs of whitespace, no empty parts
      size_t i = 0;
      while (true) {
        while (i < s.size() && is_space(s[i])) ++i;
        if (i >= s.size()) break;
        if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
          add(python_strip(s.substr(i), nullptr, false, true));
          break;
        }
        size_t end = i;
        while (end < s.size() && !is_space(s[end])) ++end;
        add(s.substr(i, end - i));
        i = end;
      }
      return parts;
    }
    if (!is_str(*sep) || str(*sep).empty()) fail_at(line, "split() separator must be a non-empty string");
    const std::string& d = str(*sep);
    size_t from = 0;
    while (true) {
      size_t at = find_text(s, d, from);
      if (at == std::string::npos || (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split)) {
        add(s.substr(from));
        return parts;
      }
      add(s.substr(from, at - from));
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
      size_t at = find_text(s, from, pos);
      if (at == std::string::npos) break;
      out.append(s, pos, at - pos);
      out += to;
      check_size(out.size(), line);
      pos = at + from.size();
    }
    out.append(s, pos);
    return out;
  }

  // str.format with {} / {0} / {name} fields and {{ }} escapes; a format spec or conversion is refused.
  std::string python_format(const std::string& s, const Args& args, int32_t line) {
    std::string out;
    size_t next_auto = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
        out += c;
        ++i;
        continue;
      }
      if (c == '}') fail_at(line, "format(): single '}' in the format string");
      if (c != '{') {
        out += c;
        continue;
      }
      const size_t close = s.find('}', i);
      if (close == std::string::npos) fail_at(line, "format(): unclosed '{' in the format string");
      const std::string field = s.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos)
        fail_at(line, "format(): only {}, {N} and {name} fields are supported, not {" + field + "}");
      const Value* v = nullptr;
      if (field.empty()) {
        v = next_auto < args.positional.size() ? &args.positional[next_auto] : nullptr;
        ++next_auto;
      } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        const size_t idx = size_t(std::stoull(field));
        v = idx < args.positional.size() ? &args.positional[idx] : nullptr;
      } else {
        for (const auto& [key, value] : args.keyword)
          if (key == field) v = &value;
      }
      if (v == nullptr) fail_at(line, "format(): no argument for {" + field + "}");
      out += to_str(*v);
      budget_.charge_bytes(static_cast<int64_t>(out.size()), line);
      i = close;
    }
    return out;
  }

  // jinja2's min/max filters: the smallest/largest item (strings compared case-insensitively unless
  // case_sensitive=true; by an item's attribute= when given); undefined for an empty sequence.
  Value min_or_max(bool want_max, const Value& input, const Args& args, int32_t line) {
    const Value* attribute = args.get(99, "attribute");
    const Value* case_sensitive = args.get(0, "case_sensitive");
    const bool fold = !(case_sensitive && truthy(*case_sensitive));
    const auto key_of = [&](const Json& item) -> Json {
      Json k = item;
      if (attribute && is_str(*attribute)) {
        const Value a = attribute_of(item, str(*attribute), line);
        k = a.is_data() ? a.data : Json();
      }
      if (fold && k.is_string()) k = ascii_lower(k.get<std::string>());
      return k;
    };
    const std::vector<Json> items = iterable_items(input, line);
    if (items.empty()) return Value();
    size_t best = 0;
    Json best_key = key_of(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
      count_iteration(line);
      Json k = key_of(items[i]);
      const bool numbers = k.is_number() && best_key.is_number();
      if (!numbers && !(k.is_string() && best_key.is_string()))
        fail_at(line, std::string(want_max ? "max" : "min") + "(): items must all be numbers or all strings");
      const bool better =
          numbers ? (want_max ? k.get<double>() > best_key.get<double>() : k.get<double>() < best_key.get<double>())
                  : (want_max ? k.get<std::string>() > best_key.get<std::string>()
                              : k.get<std::string>() < best_key.get<std::string>());
      if (better) {
        best = i;
        best_key = std::move(k);
      }
    }
    return Value::of(items[best]);
  }

  // The Python methods templates call on strings and dicts; nullopt when `name` is not one of them.
  std::optional<Value> call_method(const Value& object, const std::string& name, const Args& args, int32_t line) {
    if (is_str(object)) {
      const std::string& s = str(object);
      if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value::of(python_strip(s, args.get(0, "chars"), name != "rstrip", name != "lstrip"));
      if (name == "split") {
        const Value* max_split = args.get(1, "maxsplit");
        return Value::of(
            python_split(s, args.get(0, "sep"), max_split && is_int(*max_split) ? as_int(*max_split, line) : -1, line));
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
      if (name == "format") return Value::of(python_format(s, args, line));
      if (name == "upper") return Value::of(ascii_upper(s));
      if (name == "lower") return Value::of(ascii_lower(s));
      if (name == "capitalize") return Value::of(capitalize(s));
      if (name == "title") return Value::of(title(s));
      if (name == "replace") {
        const Value* count = args.get(2, "count");
        return Value::of(replace(s, string_arg(args, 0, "old", name, line), string_arg(args, 1, "new", name, line),
                                 count && is_int(*count) ? as_int(*count, line) : -1, line));
      }
      if (name == "find") {
        size_t at = find_text(s, string_arg(args, 0, "sub", name, line));
        return Value::of(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
      }
      if (name == "count") {
        const std::string& sub = string_arg(args, 0, "sub", name, line);
        int64_t n = 0;
        if (!sub.empty())
          for (size_t at = find_text(s, sub); at != std::string::npos; at = find_text(s, sub, at + sub.size())) ++n;
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
        for (const auto& [key, value] : d.items()) list.push_back(name == "keys" ? dict_key_value(key) : value);
        return Value::of(std::move(list));
      }
      if (name == "get") {
        const Value* key = args.get(0, "key");
        if (key && is_str(*key)) {
          auto it = find_key(d, str(*key), line);
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
      if (v.data.is_string()) return utf8_length(str(v));
      if (v.data.is_array() || v.data.is_object()) return static_cast<int64_t>(v.data.size());
    }
    fail_at(line, "object of type '" + type_name(v) + "' has no length");
  }

  Value attribute_of(const Json& item, const std::string& path, int32_t line) {
    const Json* at = &item;
    size_t from = 0;
    while (true) {  // "a.b" walks nested dicts, as Jinja's attribute= does
      size_t dot = path.find('.', from);
      if (!at->is_object()) return Value();
      auto it = find_key(*at, path.substr(from, dot == std::string::npos ? std::string::npos : dot - from), line);
      if (it == at->end()) return Value();
      at = &*it;
      if (dot == std::string::npos) {
        budget_.charge_value(*at, line);  // the copy
        return Value::of(*at);
      }
      from = dot + 1;
    }
  }

  Value eval_filter(const Expr& e) {
    if ((e.name == "length" || e.name == "count") && e.children.size() == 1) {
      // `messages|length` inside a loop over messages: count in place instead of copying the list.
      if (const Json* ref = eval_ref(*e.children[0]); ref && (ref->is_array() || ref->is_object()))
        return Value::of(static_cast<int64_t>(ref->size()));
    }
    Value input = eval(*e.children[0]);
    Args args = eval_args(e, 1);
    return apply_filter(e.name, input, args, e.line);
  }

  Value apply_filter(const std::string& name, const Value& input, const Args& args, int32_t line) {
    // transformers renders without autoescape, but `escape` escapes whatever the setting (markupsafe's five).
    if (name == "safe") return input;
    if (name == "e" || name == "escape")
      return Value::of(html_escape(to_str(input), QuoteEntity::kNumeric));  // markupsafe's
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
      // Indentation multiplies a deep value's size: the text stops growing at the limit instead of after it.
      const bool complete = append_json(
          out, input.is_data() ? input.data : Json(),
          indent && is_int(*indent) ? static_cast<int32_t>(std::clamp<int64_t>(as_int(*indent, line), 0, 64)) : -1, 0,
          static_cast<size_t>(limits_.max_output_bytes));
      if (!complete) check_size(out.size(), line);  // past the limit: fails
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
        out += to_str(attribute && is_str(*attribute) ? attribute_of(item, str(*attribute), line) : Value::of(item));
        check_size(out.size(), line);
      }
      return Value::of(std::move(out));
    }
    if (name == "replace") {
      const Value* count = args.get(2, "count");
      return Value::of(replace(to_str(input), string_arg(args, 0, "old", name, line),
                               string_arg(args, 1, "new", name, line),
                               count && is_int(*count) ? as_int(*count, line) : -1, line));
    }
    if (name == "int") {
      if (is_num(input) && input.data.is_number_float()) {
        const double d = as_double(input);
        // Python raises on these; a cast would be undefined behaviour.
        if (!(d > -9.2e18 && d < 9.2e18)) fail_at(line, "cannot convert float " + python_float(d) + " to integer");
        return Value::of(static_cast<int64_t>(d));
      }
      if (is_num(input)) return Value::of(as_int(input, line));
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
        int64_t v = as_int(input, line);
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
        budget_.step(line, static_cast<int64_t>(list.size()));  // quadratic: each item against those kept
        bool seen = false;
        for (const Json& x : list) seen = seen || x == item;
        if (!seen) list.push_back(item);
      }
      return Value::of(std::move(list));
    }
    // jinja2's map, select, reject, selectattr and rejectattr yield nothing for a false input (none included).
    if ((name == "map" || name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") &&
        input.is_data() && input.data.is_null())
      return Value::of(Json::array());
    if (name == "min" || name == "max") return min_or_max(name == "max", input, args, line);
    if (name == "map") {
      const Value* attribute = args.get(99, "attribute");
      Json list = Json::array();
      for (const Json& item : iterable_items(input, line)) {
        count_iteration(line);
        Value mapped;
        if (attribute && is_str(*attribute)) {
          mapped = attribute_of(item, str(*attribute), line);
          if (mapped.is_undefined())
            if (const Value* fallback = args.get(99, "default")) mapped = *fallback;
        } else if (!args.positional.empty() && is_str(args.positional[0])) {
          Args rest;
          rest.positional.assign(args.positional.begin() + 1, args.positional.end());
          mapped = apply_filter(str(args.positional[0]), Value::of(item), rest, line);
          if (mapped.is_data()) budget_.charge_value(mapped.data, line);
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
          subject = attribute_of(item, str(args.positional[0]), line);
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
      std::vector<std::pair<Json, Json>> entries;
      for (const auto& [key, value] : input.data.items()) entries.emplace_back(dict_key_value(key), value);
      // Integer keys in numeric order (Python's), strings in code-point order, integers before strings.
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        if (a.first.is_number_integer() != b.first.is_number_integer()) return a.first.is_number_integer();
        if (a.first.is_number_integer()) return a.first.template get<int64_t>() < b.first.template get<int64_t>();
        return a.first.template get_ref<const std::string&>() < b.first.template get_ref<const std::string&>();
      });
      Json pairs = Json::array();
      for (auto& [key, value] : entries) pairs.push_back(Json::array({key, value}));
      return Value::of(std::move(pairs));
    }
    if (name == "indent") {
      const Value* width_arg = args.get(0, "width");
      int64_t width = width_arg && is_int(*width_arg) ? std::clamp<int64_t>(as_int(*width_arg, line), 0, 256) : 4;
      const Value* first_arg = args.get(1, "first");
      std::string pad(static_cast<size_t>(width), ' ');
      std::string s = to_str(input), out;
      if (first_arg && truthy(*first_arg)) out += pad;
      for (size_t i = 0; i < s.size(); ++i) {
        out += s[i];
        if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') {
          out += pad;
          check_size(out.size(), line);  // a pad per line grows the text up to 257 times: stop at the limit
        }
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
      return (as_int(v, line) % 2 == 0) == (name == "even");
    }
    if (args.empty()) fail_at(line, "unknown test '" + name + "' (or it needs an argument)");
    const Value& arg = args[0];
    if (name == "divisibleby") {
      if (!is_int(v) || !is_int(arg) || as_int(arg, line) == 0) fail_at(line, "divisibleby expects non-zero integers");
      return as_int(arg, line) == -1 || as_int(v, line) % as_int(arg, line) == 0;
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
  RenderBudget budget_;
  std::vector<Scope> scopes_;
  int64_t num_iterations_ = 0;
  int32_t loop_depth_ = 0;
  int32_t call_depth_ = 0;
};

}  // namespace

std::string render_program(const Program& program, const Json& context, const JinjaShouldStop& should_stop) {
  Renderer renderer(program, context, should_stop);
  return renderer.run(program.body);
}

}  // namespace pagoda::jinja
