// The raw-socket HTTP client of the server tests.
#include "support/raw_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace pagoda::raw_http {
namespace {

bool has_length(const HttpReply& r) {
  std::string h = r.headers;
  for (char& c : h) c = char(std::tolower(static_cast<unsigned char>(c)));
  return h.find("content-length: ") != std::string::npos || h.find("transfer-encoding: chunked") != std::string::npos;
}

}  // namespace

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  return bound ? ntohs(addr.sin_port) : 0;
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

std::string send_raw(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  send_all(fd, bytes);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
    // One response is enough: stop once it is complete (keep-alive connections stay open); a body without a length
    // runs to the close.
    const HttpReply r = parse_reply(out);
    if (r.status != 0 && has_length(r)) break;
  }
  close(fd);
  return out;
}

HttpReply parse_reply(const std::string& raw, bool head_request) {
  HttpReply r;
  r.raw = raw;
  // Interim responses (100 Continue) come before the final one.
  size_t start = 0;
  while (raw.compare(start, 10, "HTTP/1.1 1") == 0) {
    const size_t end = raw.find("\r\n\r\n", start);
    if (end == std::string::npos) return r;
    start = end + 4;
  }
  const size_t head_end = raw.find("\r\n\r\n", start);
  if (head_end == std::string::npos || raw.compare(start, 9, "HTTP/1.1 ") != 0 || head_end - start < 12) return r;
  const std::string head = raw.substr(start, head_end - start);
  std::string lower_head = head;
  for (char& c : lower_head) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string rest = raw.substr(head_end + 4);
  std::string body;
  if (head_request) {
    // No body, whatever Content-Length says.
  } else if (lower_head.find("transfer-encoding: chunked") != std::string::npos) {
    size_t pos = 0;
    for (;;) {
      const size_t line_end = rest.find("\r\n", pos);
      if (line_end == std::string::npos) return r;  // incomplete
      size_t size = 0;
      for (size_t i = pos; i < line_end && std::isxdigit(static_cast<unsigned char>(rest[i])); ++i)
        size = size * 16 + size_t(std::isdigit(static_cast<unsigned char>(rest[i])) ? rest[i] - '0'
                                                                                    : std::tolower(rest[i]) - 'a' + 10);
      if (size == 0) break;
      if (line_end + 2 + size + 2 > rest.size()) return r;
      body += rest.substr(line_end + 2, size);
      pos = line_end + 2 + size + 2;
    }
  } else if (const size_t cl = lower_head.find("content-length: "); cl != std::string::npos) {
    const size_t length = std::strtoul(lower_head.c_str() + cl + 16, nullptr, 10);
    if (rest.size() < length) return r;
    body = rest.substr(0, length);
  } else {
    // Neither: the body runs to the connection's close (HTTP/1.0 style); the caller read until then.
    body = rest;
  }
  r.status = std::atoi(head.c_str() + 9);
  r.headers = head;
  r.body = std::move(body);
  return r;
}

HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& extra_headers, std::chrono::milliseconds timeout) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (const std::string& h : extra_headers) req += h + "\r\n";
  req += "\r\n" + body;
  return parse_reply(send_raw(port, req, timeout));
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

std::optional<double> metric_value(const std::string& scrape, const std::string& series) {
  size_t pos = 0;
  while ((pos = scrape.find(series, pos)) != std::string::npos) {
    if (pos == 0 || scrape[pos - 1] == '\n') {
      // The value follows the line's last space (label values may hold spaces).
      const size_t end = std::min(scrape.find('\n', pos), scrape.size());
      const size_t space = scrape.rfind(' ', end - 1);
      if (space != std::string::npos && space > pos) return std::strtod(scrape.c_str() + space + 1, nullptr);
    }
    pos += series.size();
  }
  return std::nullopt;
}

}  // namespace pagoda::raw_http
