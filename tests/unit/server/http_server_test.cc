// HttpServer alone, in this process, with small handlers: an exception anywhere in a handler is a 500 and the
// server goes on; the read buffer's bound turns a huge trailer into a 431; and a fuzz of raw requests (random
// bytes, mutated requests, broken chunking, trailers, pipelining, truncation, half-closes) never crashes it.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "support/raw_http_client.h"

namespace pagoda::server {
namespace {

using raw_http::http_request;
using raw_http::HttpReply;
using raw_http::parse_reply;
using raw_http::send_raw;

class TestServer {
 public:
  explicit TestServer(HttpServerOptions options = {}) {
    options.port = 0;
    options.log_internal_error = [this](const std::string&) { ++num_internal_errors; };
    auto created = HttpServer::create(options, [this](std::shared_ptr<HttpExchange> ex) { handle(std::move(ex)); });
    EXPECT_TRUE(created.ok()) << created.error();
    if (!created.ok()) return;
    server_ = std::move(created).value();
    thread_ = std::thread([this] { server_->run(); });
  }
  ~TestServer() {
    if (!server_) return;
    server_->stop();
    thread_.join();
  }
  int port() const { return server_->port(); }
  std::atomic<int> num_internal_errors{0};

 private:
  static void handle(std::shared_ptr<HttpExchange> ex) {
    const std::string& path = ex->request().path;
    if (path == "/throw") throw std::runtime_error("a handler bug");
    if (path == "/throw-later") {
      ex->post([] { throw std::logic_error("a bug in work posted to the strand"); });
      return;
    }
    if (path == "/throw-mid-stream") {
      ex->start_stream(200, "text/event-stream");
      ex->send("data: 1\n\n");
      ex->post([] { throw std::bad_alloc(); });
      return;
    }
    if (path == "/stream") {
      ex->start_stream(200, "text/plain");
      ex->send("streamed");  // never the request's bytes: the fuzz test looks for status lines in replies
      ex->end_stream();
      return;
    }
    HttpResponse r;
    r.body = path == "/health" ? "{\"status\":\"ok\"}" : std::to_string(ex->request().body.size());
    ex->respond(std::move(r));
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST(HttpServerTest, AnExceptionInAHandlerIsA500AndTheServerGoesOn) {
  TestServer server;
  EXPECT_EQ(http_request(server.port(), "GET", "/throw").status, 500);
  EXPECT_EQ(http_request(server.port(), "GET", "/throw-later").status, 500);
  const HttpReply mid = http_request(server.port(), "GET", "/throw-mid-stream");
  EXPECT_EQ(mid.status, 200);  // the headers had gone: the stream ends instead
  EXPECT_EQ(mid.body, "data: 1\n\n");
  EXPECT_EQ(server.num_internal_errors.load(), 3);
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
}

TEST(HttpServerTest, AHeaderLimitBeyondWhatBeastStoresIsRefused) {
  HttpServerOptions o;
  o.max_header_bytes = 100 << 10;
  EXPECT_FALSE(HttpServer::create(o, [](std::shared_ptr<HttpExchange>) {}).ok());
}

TEST(HttpServerTest, TrailersAreBoundedByTheHeaderLimit) {
  HttpServerOptions o;
  o.max_header_bytes = 4096;
  TestServer server(o);
  const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n";
  EXPECT_EQ(
      parse_reply(send_raw(server.port(), head + "T: " + std::string(5000, 't') + "\r\n\r\n", std::chrono::seconds(5)))
          .status,
      431);
  const HttpReply ok = parse_reply(send_raw(server.port(), head + "T: t\r\n\r\n", std::chrono::seconds(5)));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "3");
}

TEST(HttpServerTest, BodiesBeingReceivedAreBoundedTogether) {
  HttpServerOptions o;
  o.max_body_bytes = 1 << 20;
  o.max_total_body_bytes = (1 << 20) + 1000;
  TestServer server(o);
  // A client announces a 1 MiB body and sends only its start: the budget is held while it uploads.
  const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\nabc";
  int slow = -1;
  auto open_slow = [&] {
    if (slow >= 0) close(slow);
    slow = raw_http::connect_loopback(server.port());
    ASSERT_GE(slow, 0);
    ASSERT_EQ(::send(slow, head.data(), head.size(), MSG_NOSIGNAL), ssize_t(head.size()));
  };
  open_slow();
  // A 4096-byte body until its reply has `status`, within 10 s (a deadline, not a count of tries: on a busy machine
  // 200 quick tries could all come before the server has read the slow client's head). A probe the server reads
  // before that head holds 4096 bytes of the budget, and the slow client is then refused with a 503: it reconnects.
  auto post_until = [&](int status) {
    HttpReply r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (r.status != status && std::chrono::steady_clock::now() < deadline) {
      r = http_request(server.port(), "POST", "/echo", std::string(4096, 'x'));
      if (r.status == status) break;
      char byte;
      if (slow >= 0 && ::recv(slow, &byte, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) open_slow();  // answered or closed
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return r;
  };
  EXPECT_EQ(post_until(503).status, 503);
  EXPECT_EQ(http_request(server.port(), "POST", "/echo", std::string(500, 'x')).status, 200);  // small ones fit
  close(slow);
  slow = -1;
  const HttpReply again = post_until(200);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, "4096");
}

// Valid requests the mutator starts from.
std::vector<std::string> seed_requests() {
  return {
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-T: "
      "v\r\n\r\n",
      "POST /stream HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi",
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "POST /throw HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
      "GET /throw-mid-stream HTTP/1.1\r\nHost: x\r\n\r\n",
  };
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const std::vector<std::string> tokens = {
      "\r\n",
      "\r\n\r\n",
      ":",
      " ",
      "\t",
      "\0",
      "Content-Length: ",
      "Transfer-Encoding: chunked\r\n",
      "0\r\n",
      "ffffffffffffffff\r\n",
      "-1",
      "99999999999999999999",
      "HTTP/1.0",
      "HTTP/2.0",
      "HTTP/1.1",
      "\xff\xfe",
      ";",
      "Connection: close\r\n",
      "Expect: 100-continue\r\n",
      "Host: y\r\n",
      "\r\n 1",
  };
  const int num_edits = 1 + int(rng() % 4);
  for (int k = 0; k < num_edits && !s.empty(); ++k) {
    const size_t pos = rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0: s[std::min(pos, s.size() - 1)] = char(rng() % 256); break;
      case 1: s.resize(pos); break;
      case 2: s.insert(pos, tokens[rng() % tokens.size()]); break;
      case 3: s.insert(pos, s.substr(pos, rng() % 64)); break;
      case 4: s.erase(pos, rng() % 16); break;
      default: s.insert(pos, std::string(rng() % 3 == 0 ? 70000 : rng() % 300, char('a' + rng() % 26))); break;
    }
  }
  return s;
}

// Sends `bytes`, then closes its side (half-close) or the whole socket, and reads what comes back.
std::string exchange_raw(int port, const std::string& bytes, bool half_close) {
  const int fd = raw_http::connect_loopback(port);
  if (fd < 0) return "";
  raw_http::send_all(fd, bytes);
  std::string out;
  if (half_close) {
    shutdown(fd, SHUT_WR);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[16384];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, size_t(n));
  }
  close(fd);
  return out;
}

TEST(HttpServerFuzzTest, RawRequestsNeverCrashOrHangTheServer) {
  HttpServerOptions o;
  o.read_timeout = std::chrono::milliseconds(300);
  o.max_body_bytes = 1 << 20;
  o.max_header_bytes = 8192;
  TestServer server(o);
  std::mt19937 rng(20261204);
  const std::vector<std::string> seeds = seed_requests();
  const std::set<int> allowed = {200, 400, 413, 431, 500};
  int num_answered = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string request;
    if (i % 5 == 0) {
      request.resize(rng() % 512);
      for (char& c : request) c = char(rng() % 256);
    } else {
      request = mutate(seeds[rng() % seeds.size()], rng);
    }
    const std::string raw = exchange_raw(server.port(), request, /*half_close=*/i % 3 != 0);
    // Whatever came back is HTTP with a known status (or nothing, for bytes that never became a request).
    size_t pos = 0;
    while ((pos = raw.find("HTTP/1.1 ", pos)) != std::string::npos) {
      if (raw.compare(pos, 10, "HTTP/1.1 1") != 0) {
        const int status = std::atoi(raw.c_str() + pos + 9);
        ASSERT_TRUE(allowed.count(status)) << status << " for " << testing::PrintToString(request.substr(0, 300));
        ++num_answered;
      }
      pos += 9;
    }
  }
  EXPECT_GT(num_answered, 1500);
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
}

}  // namespace
}  // namespace pagoda::server
