// A small blocking HTTP/1.1 client over raw sockets for the server tests (the real binary's and the in-process
// fuzz tests'), so tests can also send what no well-behaved client would (partial headers, broken chunking,
// abrupt disconnects, half-closes).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::raw_http {

struct HttpReply {
  int status = 0;  // 0: no (complete) response
  std::string headers;
  std::string body;  // chunked bodies decoded
  std::string raw;   // every byte received, for failure messages
};

// A free loopback port (bound and released: the caller takes it at once).
int free_loopback_port();
// Opens a connection to 127.0.0.1:port; -1 on failure.
int connect_loopback(int port);
// Writes all of `bytes` to `fd` (stops early if the peer is gone); whether all were written.
bool send_all(int fd, const std::string& bytes);
// Sends raw bytes and reads until the server closes or `timeout` passes; the raw bytes received.
std::string send_raw(int port, const std::string& bytes, std::chrono::milliseconds timeout);
// Parses raw response bytes (one response; Content-Length or chunked; interim 1xx responses before it skipped;
// a HEAD response (`head`) has no body whatever its Content-Length says).
HttpReply parse_reply(const std::string& raw, bool head = false);
HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                       const std::vector<std::string>& extra_headers = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));
// The "data: ..." payloads of an SSE body, in order.
std::vector<std::string> sse_payloads(const std::string& body);
// A metric's value in a Prometheus scrape (the first sample whose name and labels start with `series`).
std::optional<double> metric_value(const std::string& scrape, const std::string& series);

}  // namespace pagoda::raw_http
