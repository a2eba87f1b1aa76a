// HttpServer: HTTP/1.1 over TCP on Boost.Beast's parser and Boost.Asio's event loop: a few I/O threads serve
// every connection (no thread per connection or per stream), with keep-alive, limits against hostile clients
// (header, trailer and body sizes, a deadline for reading each request, caps on connections overall and per
// address, bounds on the bytes queued for slow readers) and disconnect detection while a response is pending.
// Answers CORS preflights and marks responses for the allowed origins. Hands each request to one handler as an
// HttpExchange; knows nothing of what the paths mean. No exception from a handler or from Beast leaves an I/O
// thread: the request gets a 500 and the server goes on.
#pragma once

#include <pagoda/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_exchange.h"

namespace pagoda::server {

struct RefusedRequest {
  int status = 0;
  std::string message;
  std::string method;
  std::string target;
  std::string remote;  // "ip:port"
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port (see HttpServer::port)
  int num_io_threads = 2;
  // The request line and headers, and a chunked body's trailer, at most (beyond: 431). Beast keeps one field in
  // at most 64 KiB, so larger limits are refused.
  size_t max_header_bytes = 32 << 10;
  size_t max_body_bytes = 8 << 20;                  // beyond it: 413
  std::chrono::milliseconds read_timeout{10'000};   // to receive a whole request, from its first byte (slowloris)
  std::chrono::milliseconds write_timeout{30'000};  // for a client to take one queued write
  std::chrono::milliseconds idle_timeout{60'000};   // keep-alive connection between requests
  size_t max_stream_pending_bytes = 4 << 20;        // queued for a slow reader; beyond it the stream is cut
  // Queued for every client together; beyond it a stream holding more than its fair share is cut and a large
  // whole response is replaced by a 503, so slow readers cannot hold the server's memory.
  size_t max_total_pending_bytes = 256 << 20;
  // Request bodies being received or handled, every connection together (reserved when a request's headers
  // arrive: its Content-Length, or max_body_bytes when chunked); beyond it a new request gets 503.
  size_t max_total_body_bytes = 256 << 20;
  int max_connections = 2048;             // beyond it a new connection gets 503 and is closed
  int max_connections_per_address = 512;  // from one client address (a proxy in front counts as one)
  // The body of the errors the HTTP layer itself answers (400 malformed, 413 too large, 431, 500, 503), so they
  // have the API's error shape (`path`: the request's path as far as it was parsed, empty when not at all, so an
  // API whose clients read another shape can answer in it); plain text when unset.
  std::function<HttpResponse(int status, std::string message, std::string_view path)> error_response;
  // Told of an exception that escaped a handler (the request got a 500, the server went on); stderr when unset.
  std::function<void(const std::string& what)> log_internal_error;
  // Told of each request the HTTP layer answered itself (malformed 400, 413, 431, the body budget's 503, a
  // refused CORS preflight): the handler never saw these. `method` and `target` are empty when unparsed.
  std::function<void(const RefusedRequest& refused)> log_refused;
  // Browser origins allowed to call the server (CORS): exact origins such as "https://app.example.com", or "*"
  // for any. Preflights (OPTIONS) are answered here; every response to an allowed origin, errors and streams
  // included, carries Access-Control-Allow-Origin. Empty: none (a browser on another origin is refused).
  std::vector<std::string> allowed_origins;
};

class HttpServer {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpExchange>)>;

  // Binds and listens; kUnavailable when the address is taken.
  static Result<std::unique_ptr<HttpServer>> create(const HttpServerOptions& options, Handler handler);
  ~HttpServer();

  int port() const;  // the bound port
  // Serves until stop(); the caller's thread is one of the I/O threads.
  void run();
  // Thread-safe; run() returns soon after. Open connections are closed.
  void stop();
  // Calls `fn` on an I/O thread every `interval` while running (deadlines, draining).
  void every(std::chrono::milliseconds interval, std::function<void()> fn);
  // Calls `fn(signal)` on an I/O thread when one of `signals` arrives (SIGINT, SIGTERM), every time.
  void on_signals(std::vector<int> signals, std::function<void(int)> fn);
  int num_connections() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::server
