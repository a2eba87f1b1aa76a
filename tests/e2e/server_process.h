// ServerProcess: a real `pagoda serve` in a child process on a free loopback port (--port 0; the port is read
// from its start-up line). The tests talk to it with tests/support/raw_http_client.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/raw_http_client.h"

namespace pagoda::e2e {

class ServerProcess {
 public:
  // Starts `pagoda serve --port 0 ARGS` and waits until /health answers (or fails the test's assertion via
  // started() == false, with the log in log()).
  // `launcher`, when given, runs in front of the binary (e.g. {"mpirun", "-np", "2"}); `env` entries "K=V" are
  // added to the environment.
  explicit ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& launcher = {},
                         const std::vector<std::string>& env = {});
  ~ServerProcess();  // SIGKILL if still running (SIGTERM first, when launched through a launcher)
  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const;  // its stderr so far
  void signal(int sig);
  // Waits for the process to exit; the exit code, or -1 on a signal or timeout.
  int wait_exit(std::chrono::milliseconds timeout);

 private:
  bool reap();  // true once the child has exited (its exit code recorded)

  pid_t pid_ = -1;
  int port_ = -1;
  std::string dir_;
  std::string err_path_;
  bool exited_ = false;
  bool launched_ = false;
  int exit_code_ = -1;
};

// The server's /metrics scrape.
std::string metrics(const ServerProcess& server);
// Polls /metrics until `done(scrape)` holds; false when `timeout` passed first.
bool wait_for_metrics(const ServerProcess& server, std::chrono::milliseconds timeout,
                      const std::function<bool(const std::string&)>& done);
// Until nothing is prepared, runs or waits (the engine publishes its figures after each step).
bool wait_idle(const ServerProcess& server, std::chrono::milliseconds timeout);

// The raw-socket client (tests/support/raw_http_client.h), under the names these tests use.
using raw_http::connect_loopback;
using raw_http::free_loopback_port;
using raw_http::http_request;
using raw_http::HttpReply;
using raw_http::metric_value;
using raw_http::parse_reply;
using raw_http::send_all;
using raw_http::send_raw;
using raw_http::sse_payloads;

}  // namespace pagoda::e2e
