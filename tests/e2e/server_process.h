// ServerProcess: a real `pagoda serve` in a child process on a free loopback port (--port 0; the port is read
// from its start-up line), and a small blocking HTTP/1.1 client over raw sockets, so tests can also send what
// no well-behaved client would (partial headers, abrupt disconnects).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

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

struct HttpReply {
  int status = 0;  // 0: no (complete) response
  std::string headers;
  std::string body;  // chunked bodies decoded
  std::string raw;   // every byte received, for failure messages
};

// Opens a connection to 127.0.0.1:port; -1 on failure.
int connect_loopback(int port);
// Sends raw bytes and reads until the server closes or `timeout` passes; the raw bytes received.
std::string send_raw(int port, const std::string& bytes, std::chrono::milliseconds timeout);
// Parses raw response bytes (one response; Content-Length or chunked).
HttpReply parse_reply(const std::string& raw);
HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                       const std::vector<std::string>& extra_headers = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));
// The "data: ..." payloads of an SSE body, in order.
std::vector<std::string> sse_payloads(const std::string& body);
// A metric's value in a Prometheus scrape (the first sample whose name and labels start with `series`).
std::optional<double> metric_value(const std::string& scrape, const std::string& series);

}  // namespace pagoda::e2e
