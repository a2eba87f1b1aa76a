// RequestLog: the two line formats.
#include "server/request_log.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/json_text.h"

namespace pagoda::server {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void RequestLog::write(const RequestLogEntry& e) {
  std::string line;
  if (format_ == LogFormat::kJson) {
    nlohmann::json j = {{"ts", unix_seconds()},
                        {"event", "request"},
                        {"id", e.id},
                        {"method", e.method},
                        {"path", e.path},
                        {"status", e.status},
                        {"choices", e.num_choices},
                        {"prompt_tokens", e.prompt_tokens},
                        {"output_tokens", e.output_tokens},
                        {"cached_tokens", e.cached_tokens},
                        {"ttft_ms", e.ttft_ms},
                        {"e2e_ms", e.e2e_ms},
                        {"finish", e.finish}};
    line = json_text(j);
  } else {
    line = fmt::format(
        "pagoda: request {} {} {} status={} prompt_tokens={} output_tokens={} cached_tokens={} "
        "ttft_ms={:.1f} e2e_ms={:.1f} finish={}",
        e.id.empty() ? "-" : e.id, e.method, e.path, e.status, e.prompt_tokens, e.output_tokens, e.cached_tokens,
        e.ttft_ms, e.e2e_ms, e.finish);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void RequestLog::message(const std::string& text) {
  std::string line;
  if (format_ == LogFormat::kJson) {
    line = json_text({{"ts", unix_seconds()}, {"event", "server"}, {"message", text}});
  } else {
    line = "pagoda: " + text;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void reply_and_log(RequestLog& log, HttpExchange& ex, HttpResponse response, const std::string& finish) {
  RequestLogEntry e;
  e.method = ex.request().method;
  e.path = ex.request().path;
  e.status = response.status;
  e.e2e_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ex.request().received).count();
  e.finish = finish.empty() ? "-" : finish;
  log.write(e);
  ex.respond(std::move(response));
}

}  // namespace pagoda::server
