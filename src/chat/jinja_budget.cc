// RenderBudget: counting, polling the stop hook, and the JSON footprint walk.
#include "chat/jinja_budget.h"

#include <algorithm>
#include <string>

namespace pagoda::jinja {
namespace {

// Heap bytes per node, roughly as libstdc++ and nlohmann lay them out: the 16-byte value, plus a separately
// allocated std::string (32) for strings and keys, a vector (24) for lists and dicts.
constexpr int64_t kNodeBytes = 16;
constexpr int64_t kStringBytes = 32;
constexpr int64_t kContainerBytes = 24;
// The stop hook is a caller's function (a clock read, an atomic load): polled every this many steps or bytes,
// which keeps its cost negligible and a stop prompt (a step is well under a microsecond; 4 MiB is a few ms).
constexpr int64_t kPollSteps = 4096;
constexpr int64_t kPollBytes = int64_t(4) << 20;

[[noreturn]] void fail_with(StatusCode code, int32_t line, const std::string& message) {
  throw JinjaError{"jinja: line " + std::to_string(line) + ": " + message, code};
}

// Recursion no deeper than max_depth + 1: the walk stops descending past the bound, so a value nested 100,000 deep
// costs 129 frames of this function, not 100,000.
void add_footprint(const Json& value, int32_t depth, int64_t max_bytes, int32_t max_depth, JsonFootprint& f) {
  f.bytes += kNodeBytes;
  if (value.is_string()) {
    f.bytes += kStringBytes + int64_t(value.get_ref<const std::string&>().size());
    return;
  }
  if (!value.is_array() && !value.is_object()) return;
  f.depth = std::max(f.depth, depth + 1);
  f.bytes += kContainerBytes;
  if (f.depth > max_depth) return;
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      f.bytes += kStringBytes + int64_t(key.size());
      add_footprint(child, depth + 1, max_bytes, max_depth, f);
      if (f.bytes > max_bytes || f.depth > max_depth) return;
    }
  } else {
    for (const Json& child : value) {
      add_footprint(child, depth + 1, max_bytes, max_depth, f);
      if (f.bytes > max_bytes || f.depth > max_depth) return;
    }
  }
}

}  // namespace

JsonFootprint json_footprint(const Json& value, int64_t max_bytes, int32_t max_depth) {
  JsonFootprint f;
  add_footprint(value, 0, max_bytes, max_depth, f);
  return f;
}

RenderBudget::RenderBudget(const JinjaLimits& limits, const JinjaShouldStop& should_stop)
    : limits_(limits), should_stop_(should_stop), next_poll_steps_(kPollSteps), next_poll_bytes_(kPollBytes) {
  poll(0);  // a render asked for after its deadline does not start
}

void RenderBudget::poll(int32_t line) {
  next_poll_steps_ = num_steps_ + kPollSteps;
  next_poll_bytes_ = num_bytes_ + kPollBytes;
  if (should_stop_ && should_stop_()) fail_with(StatusCode::kCancelled, line, "the render was cancelled");
}

void RenderBudget::step(int32_t line, int64_t num_steps) {
  num_steps_ += num_steps;
  if (num_steps_ > limits_.max_steps)
    fail_with(StatusCode::kLimitExceeded, line,
              "the render exceeds its budget of " + std::to_string(limits_.max_steps) + " steps");
  if (num_steps_ >= next_poll_steps_) poll(line);
}

void RenderBudget::charge_bytes(int64_t num_bytes, int32_t line) {
  num_bytes_ += num_bytes;
  if (num_bytes_ > limits_.max_total_bytes)
    fail_with(StatusCode::kLimitExceeded, line,
              "the render exceeds its budget of " + std::to_string(limits_.max_total_bytes) + " bytes built");
  if (num_bytes_ >= next_poll_bytes_) poll(line);
}

void RenderBudget::charge_value(const Json& value, int32_t line) {
  if (value.is_string()) {  // the common cases, without the walk
    charge_bytes(kNodeBytes + kStringBytes + int64_t(value.get_ref<const std::string&>().size()), line);
    return;
  }
  if (value.is_primitive()) {
    charge_bytes(kNodeBytes, line);
    return;
  }
  const JsonFootprint f = json_footprint(value, limits_.max_total_bytes - num_bytes_, limits_.max_value_depth);
  if (f.depth > limits_.max_value_depth)
    fail_with(StatusCode::kLimitExceeded, line,
              "a value nests lists or dicts deeper than " + std::to_string(limits_.max_value_depth) + " levels");
  charge_bytes(f.bytes, line);
}

void RenderBudget::enter(int32_t line) {
  if (++depth_ > limits_.max_render_depth) {
    --depth_;
    fail_with(StatusCode::kLimitExceeded, line,
              "evaluation nested deeper than " + std::to_string(limits_.max_render_depth) + " levels");
  }
}

}  // namespace pagoda::jinja
