// RenderBudget: what one render may spend (JinjaLimits' steps, bytes built and nesting depths) and the caller's
// stop hook, polled as the budget is spent. The renderer reports every statement and expression it runs, every
// value it builds or copies and every nested evaluation; past a bound it throws JinjaError (kLimitExceeded), and
// once the hook says stop it throws kCancelled. Owns only counters: one render, one thread.
#pragma once

#include <cstdint>

#include "chat/jinja_syntax.h"

namespace pagoda::jinja {

// The approximate heap footprint of a JSON value (nodes, strings, keys) and how deep its lists and dicts nest.
struct JsonFootprint {
  int64_t bytes = 0;
  int32_t depth = 0;  // 0 for a scalar, 1 for a list of scalars
};
// Stops early once the bytes exceed `max_bytes` or the depth exceeds `max_depth` (the result then exceeds that
// bound, nothing more is known), so it recurses at most max_depth + 1 levels however deep the value nests.
JsonFootprint json_footprint(const Json& value, int64_t max_bytes, int32_t max_depth);

class RenderBudget {
 public:
  RenderBudget(const JinjaLimits& limits, const JinjaShouldStop& should_stop);

  // Statements, expressions, loop iterations, comparisons: anything that costs time but allocates nothing.
  void step(int32_t line, int64_t num_steps = 1);
  // Bytes of a value built or copied (the total bounds both the copying work and the memory a render can hold).
  void charge_bytes(int64_t num_bytes, int32_t line);
  // A value built or copied: its footprint is charged and its nesting depth checked.
  void charge_value(const Json& value, int32_t line);
  // Evaluation nesting (expressions in expressions, statements in blocks, macro calls): each level is C++ stack.
  void enter(int32_t line);
  void leave() { --depth_; }

  int64_t num_steps() const { return num_steps_; }
  int64_t num_bytes() const { return num_bytes_; }

 private:
  void poll(int32_t line);

  const JinjaLimits& limits_;
  const JinjaShouldStop& should_stop_;
  int64_t num_steps_ = 0;
  int64_t num_bytes_ = 0;
  int64_t next_poll_steps_ = 0;
  int64_t next_poll_bytes_ = 0;
  int32_t depth_ = 0;
};

// Enters one evaluation level for its lifetime.
class BudgetLevel {
 public:
  BudgetLevel(RenderBudget& budget, int32_t line) : budget_(budget) { budget_.enter(line); }
  ~BudgetLevel() { budget_.leave(); }
  BudgetLevel(const BudgetLevel&) = delete;
  BudgetLevel& operator=(const BudgetLevel&) = delete;

 private:
  RenderBudget& budget_;
};

}  // namespace pagoda::jinja
