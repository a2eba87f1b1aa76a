// Status and Result<T>: how pagoda reports expected failures (bad files, bad input, full queues) as values.
// Owns nothing but an error message; bugs are PAGODA_CHECK aborts, never a Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace pagoda {

// What kind of failure, for callers that act on it (the server maps these to HTTP statuses).
enum class StatusCode {
  kUnknown,          // everything that needs no special handling: a message is enough
  kInvalidArgument,  // the caller's input is wrong (400)
  // The caller's input is wrong in one way clients act on: the prompt does not fit the context (400, and
  // OpenAI's error code "context_length_exceeded").
  kContextLengthExceeded,
  kNotFound,           // what was asked for does not exist (404)
  kResourceExhausted,  // a queue or pool is full right now; retry later (429)
  kUnavailable,        // the service is shutting down or cannot take work (503)
  kCancelled,          // the caller stopped the work through a hook it passed (its deadline, a shutdown)
  kLimitExceeded,      // the work would exceed a bound set on it (e.g. a chat template's render budget)
};

// A success, or one human-readable error line ("gguf: tensor 'x' ends past the end of the file").
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok_status() { return Status(); }
  static Status error(std::string message, StatusCode code = StatusCode::kUnknown) {
    Status s;
    s.failed_ = true;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  StatusCode code() const { return code_; }

 private:
  bool failed_ = false;
  StatusCode code_ = StatusCode::kUnknown;
  std::string message_;
};

inline Status make_error(std::string message, StatusCode code = StatusCode::kUnknown) {
  return Status::error(std::move(message), code);
}

// A value or a failed Status. Accessing the value of a failed Result aborts with its message.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit on purpose, like std::expected
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "pagoda: Result constructed from an ok Status\n");
      std::abort();
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  const std::string& error() const { return status().message(); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }
  // The value, or `fallback` when this failed.
  T value_or(T fallback) && { return ok() ? std::move(std::get<T>(v_)) : std::move(fallback); }

 private:
  T& checked() {
    if (!ok()) {
      std::fprintf(stderr, "pagoda: value() of a failed Result: %s\n", std::get<Status>(v_).message().c_str());
      std::abort();
    }
    return std::get<T>(v_);
  }
  std::variant<T, Status> v_;
};

}  // namespace pagoda

// Propagate a failed Status from the current function (which returns Status or Result<U>).
#define PAGODA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::pagoda::Status pagoda_status_ = (expr);        \
    if (!pagoda_status_.ok()) return pagoda_status_; \
  } while (0)

// Assign the value of a Result expression to `lhs`, or return its error.
#define PAGODA_ASSIGN_OR_RETURN(lhs, expr) PAGODA_ASSIGN_OR_RETURN_IMPL_(PAGODA_CONCAT_(pagoda_r_, __LINE__), lhs, expr)
#define PAGODA_CONCAT_INNER_(a, b) a##b
#define PAGODA_CONCAT_(a, b) PAGODA_CONCAT_INNER_(a, b)
#define PAGODA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
