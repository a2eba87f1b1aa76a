// RequestLog: one line per request, whatever its status (id, method, path, status, prompt/output tokens, cached
// tokens, TTFT, E2E, finish reason or error), as text or JSON lines, to one FILE*. Thread-safe. And reply_and_log:
// the one way a handler answers an exchange with a whole response and its line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "server/http_exchange.h"

namespace pagoda::server {

enum class LogFormat { kText, kJson };

struct RequestLogEntry {
  std::string id;  // the response's id; empty for requests that have none (errors, /health, /tokenize...)
  std::string method = "POST";
  std::string path;
  int status = 200;
  int32_t num_choices = 1;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  int32_t cached_tokens = 0;
  double ttft_ms = 0.0;  // of the first choice; 0 when no token came
  double e2e_ms = 0.0;
  std::string finish;  // "stop", "length", "abort", "error: ..."
};

class RequestLog {
 public:
  RequestLog(std::FILE* out, LogFormat format) : out_(out), format_(format) {}
  void write(const RequestLogEntry& entry);
  void message(const std::string& text);  // a server event (start, shutdown), in the same format

 private:
  std::mutex mutex_;
  std::FILE* out_;
  LogFormat format_;
};

// Answers `ex` with `response` and writes its line: the exchange's method and path, the response's status, the
// time since the request was received, `finish` ("-" when empty).
void reply_and_log(RequestLog& log, HttpExchange& ex, HttpResponse response, const std::string& finish);

}  // namespace pagoda::server
