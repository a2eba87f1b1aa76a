// http_request: one HTTP/1.1 exchange over plain TCP or TLS (OpenSSL, the system's CA store, the host's name
// checked), with a timeout on every step, a bound on the header's bytes and on a body kept in memory, and a body
// streamed to a caller's sink instead when asked. Never follows a redirect (the caller decides: hub_client.h); never
// touches a file. Boost.Beast and Asio stay inside http_client.cc.
#pragma once

#include <pagoda/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hub/url.h"

namespace pagoda::hub {

struct HttpLimits {
  std::chrono::milliseconds timeout{30000};  // each of resolve, connect, handshake, write, and each read
  uint32_t header_bytes = 64 * 1024;
  uint64_t memory_body_bytes = 64ull << 20;  // a body read into HttpResponse::body (API JSON)
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // empty when a sink took the body, or for HEAD
  // The first value of `name` (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
};

// Takes the body's bytes as they arrive; a failed Status ends the exchange with that error.
using BodySink = std::function<Status(std::span<const char> bytes)>;
// Sees a 2xx response's status and headers before its body reaches the sink; a failed Status ends the exchange.
using HeaderCheck = std::function<Status(const HttpResponse& response)>;

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  Url url;
  std::vector<std::pair<std::string, std::string>> headers;
  // Given: a 2xx response's body goes here, not into HttpResponse::body (a 3xx/4xx/5xx body is still read into
  // memory, bounded, for its error message).
  BodySink sink;
  HeaderCheck on_header;  // with `sink` only
};

// Errors: a failed connect/handshake/read (the message names the URL and the step), a timeout, a header or an
// in-memory body over its limit, a connection closed before the body ended (the sink has what arrived).
Result<HttpResponse> http_request(const HttpRequest& request, const HttpLimits& limits = {});

}  // namespace pagoda::hub
