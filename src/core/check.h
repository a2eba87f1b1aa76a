// PAGODA_CHECK: invariants whose violation is a bug. Aborts with file:line and an actionable message.
// Expected failures (bad input, missing files) are Status values instead (include/pagoda/status.h).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace pagoda::detail {
[[noreturn]] inline void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "pagoda: internal check failed at %s:%d: %s%s%s\n", file, line, cond, msg.empty() ? "" : ": ",
               msg.c_str());
  std::abort();
}
}  // namespace pagoda::detail

// PAGODA_CHECK(cond) or PAGODA_CHECK(cond, "fmt {}", args...)
#define PAGODA_CHECK(cond, ...)                                                                 \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      ::pagoda::detail::check_failed(__FILE__, __LINE__, #cond, ::fmt::format("" __VA_ARGS__)); \
  } while (0)

#ifdef NDEBUG
#define PAGODA_DCHECK(cond, ...) \
  do {                           \
  } while (0)
#else
#define PAGODA_DCHECK(cond, ...) PAGODA_CHECK(cond, __VA_ARGS__)
#endif
