// HttpServer: the accept loop, one Session per connection (read a request -> hand it out -> write what the
// handler sends -> next request), tickers and signals, all on one io_context run by a few threads. A Session's
// work runs on its strand; an Exchange is the handler's thread-safe way to post onto it.
#include "server/http_server.h"

#include <fmt/format.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pagoda::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

const std::string& HttpRequest::header(const std::string& name) const {
  static const std::string empty;
  auto it = headers.find(name);
  return it == headers.end() ? empty : it->second;
}

namespace {

// Beast stores a header field's name and value in at most 64 KiB (and throws beyond); a trailer is bounded only
// by the read buffer, so the buffer's limit must stay below that.
constexpr size_t kMaxHeaderLimit = 60 << 10;
// A stream over its share of the server-wide queue may be cut when that queue is full; below it, never.
constexpr size_t kFairStreamShare = 64 << 10;
// A whole response this large is replaced by a 503 when the server-wide queue cannot take it.
constexpr size_t kLargeResponseBytes = 1 << 20;
// How often a connection whose client half-closed is checked for having gone entirely.
constexpr std::chrono::milliseconds kPeerPollInterval{100};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

using HeaderList = std::vector<std::pair<std::string, std::string>>;

std::string serialize(const HttpResponse& r, bool keep_alive, bool with_body, const HeaderList& extra = {}) {
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
                                 r.status, std::string(http::obsolete_reason(http::status(r.status))), r.content_type,
                                 r.body.size(), keep_alive ? "keep-alive" : "close");
  for (const auto& [k, v] : r.headers) head += fmt::format("{}: {}\r\n", k, v);
  for (const auto& [k, v] : extra) head += fmt::format("{}: {}\r\n", k, v);
  head += "\r\n";
  if (with_body) head += r.body;  // HEAD: the headers a GET gets, without the body
  return head;
}

std::string chunk(std::string_view data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); }

}  // namespace

class Session;

// A repeating timer; lives as long as the server (Impl owns it), so its handlers may capture `this`.
struct Ticker {
  Ticker(asio::io_context& ioc, std::chrono::milliseconds interval, std::function<void()> fn)
      : timer(ioc), interval(interval), fn(std::move(fn)) {}
  void arm() {
    timer.expires_after(interval);
    timer.async_wait([this](error_code ec) {
      if (ec) return;
      fn();
      arm();
    });
  }
  asio::steady_timer timer;
  std::chrono::milliseconds interval;
  std::function<void()> fn;
};

struct SignalWatch {
  SignalWatch(asio::io_context& ioc, std::function<void(int)> fn) : set(ioc), fn(std::move(fn)) {}
  void arm() {
    set.async_wait([this](error_code ec, int signal) {
      if (ec) return;
      fn(signal);
      arm();
    });
  }
  asio::signal_set set;
  std::function<void(int)> fn;
};

struct HttpServer::Impl {
  // Declared before the io_context, so they outlive the sessions its destructor frees.
  HttpServerOptions options;
  Handler handler;
  std::atomic<int> num_connections{0};
  std::atomic<bool> stopping{false};
  std::atomic<size_t> total_pending_bytes{0};  // queued for writing, every session together
  std::atomic<size_t> total_body_bytes{0};     // reserved for request bodies, every session together
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Session>> sessions;                  // for stop(): closed sessions are pruned on accept
  std::unordered_map<std::string, int> connections_per_address;  // under sessions_mutex
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::unique_ptr<Ticker>> tickers;
  std::vector<std::unique_ptr<SignalWatch>> signal_watches;
  std::shared_ptr<std::function<void()>> stop_poll;  // stop()'s wait for open connections

  HttpResponse error(int status, const std::string& message, std::string_view path = {}) const {
    if (options.error_response) return options.error_response(status, message, path);
    HttpResponse r;
    r.status = status;
    r.content_type = "text/plain";
    r.body = message + "\n";
    return r;
  }
  void report_internal_error(const std::string& what) const {
    if (options.log_internal_error) {
      try {
        options.log_internal_error(what);
        return;
      } catch (...) {
      }
    }
    std::fprintf(stderr, "pagoda: internal error: %s\n", what.c_str());
  }
  // Counts a new connection from `address`; false (and nothing counted) when a cap is reached.
  bool admit(const std::string& address) {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    if (num_connections.load() >= options.max_connections) return false;
    int& n = connections_per_address[address];
    if (n >= options.max_connections_per_address) {
      if (n == 0) connections_per_address.erase(address);
      return false;
    }
    ++n;
    ++num_connections;
    return true;
  }
  bool reserve_body(size_t bytes) {
    size_t now = total_body_bytes.load();
    do {
      if (now + bytes > options.max_total_body_bytes) return false;
    } while (!total_body_bytes.compare_exchange_weak(now, now + bytes));
    return true;
  }
  void release(const std::string& address) {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    auto it = connections_per_address.find(address);
    if (it != connections_per_address.end() && --it->second <= 0) connections_per_address.erase(it);
    --num_connections;
  }
  void refused(int status, const std::string& message, const std::string& method, const std::string& target,
               const std::string& remote) const {
    if (!options.log_refused) return;
    try {
      options.log_refused(RefusedRequest{status, message, method, target, remote});
    } catch (...) {
    }
  }
  bool origin_allowed(const std::string& origin) const {
    for (const std::string& o : options.allowed_origins)
      if (o == "*" || o == origin) return true;
    return false;
  }
  void accept();
  void run_io();  // one I/O thread: runs the loop until it stops, surviving handlers that throw
};

class Exchange;

// One TCP connection. Invariant: at most one request is in flight (generation_ names it); every member is
// touched only on the strand. While a request is handled no read is outstanding: bytes the client sends
// meanwhile (a pipelined request) are taken into buffer_ by hand, so its end can be seen.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server, std::string address)
      : stream_(std::move(socket)),
        server_(server),
        address_(std::move(address)),
        buffer_(server.options.max_header_bytes) {
    error_code ec;
    const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }
  ~Session() {
    server_.total_pending_bytes -= pending_bytes_;
    release_body();
    server_.release(address_);
  }

  asio::any_io_executor executor() { return stream_.get_executor(); }
  void start() {
    asio::dispatch(executor(), [self = shared_from_this()] { self->read_request(); });
  }
  // Server stop: an idle connection closes now; one with a request in flight closes after its response.
  void close_when_idle() {
    asio::post(executor(), [self = shared_from_this()] {
      self->keep_alive_ = false;
      if (self->state_ == State::kReading) self->disconnect();
    });
  }

  // Exchange operations (on the strand); `gen` must name the request in flight.
  void respond(uint64_t gen, HttpResponse response);
  void start_stream(uint64_t gen, int status, std::string content_type);
  void send(uint64_t gen, std::string data);
  void end_stream(uint64_t gen);
  void set_on_close(uint64_t gen, std::function<void()> fn) {
    if (gen == generation_ && state_ != State::kClosed) on_close_ = std::move(fn);
  }
  void set_cut_message(uint64_t gen, std::string data) {
    if (gen == generation_) cut_message_ = std::move(data);
  }
  // Something threw while handling request `gen`: log it and end the request with a 500 (or end its stream).
  void fail_in_flight(uint64_t gen, const std::string& what);

 private:
  enum class State { kReading, kHandling, kStreaming, kResponding, kClosed };

  void read_request();
  void read_request_body_and_headers();
  void on_header(error_code ec);
  void on_read(error_code ec);
  void release_body() {
    server_.total_body_bytes -= body_reserved_;
    body_reserved_ = 0;
  }
  void dispatch_request();
  void watch_for_disconnect();
  void on_readable_while_busy();
  void on_peer_write_closed();
  void poll_peer();
  void queue(std::string bytes);
  void do_write();
  void on_written(error_code ec);
  void end_after_queue();  // the response is complete once what is queued is written
  void cut_stream();
  void response_done();
  void disconnect();  // the client is gone (or we end the connection): fire on_close, close the socket
  void fail_request(int status, const std::string& message);
  std::string_view current_path() const;  // of the request being handled; empty when none
  bool answer_preflight(const http::request<http::string_body>& msg);
  bool response_pending() const {
    return state_ == State::kHandling || state_ == State::kStreaming ||
           (state_ == State::kResponding && end_after_write_);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  std::string address_;  // the client's IP, for the per-address cap
  std::string remote_;
  beast::flat_buffer buffer_;  // bounded: a header or trailer larger than it is a 431, never a Beast exception
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t generation_ = 0;
  State state_ = State::kReading;
  bool keep_alive_ = true;
  unsigned http_version_ = 11;  // of the request in flight: 10 or 11
  bool head_request_ = false;
  bool raw_stream_ = false;         // an HTTP/1.0 stream: no chunked framing, the end is the connection's close
  bool peer_write_closed_ = false;  // the client sent FIN: it may still read (half-close) or be gone
  bool polling_peer_ = false;
  std::optional<asio::steady_timer> peer_poll_timer_;
  HeaderList cors_headers_;  // for the request in flight, when its Origin is allowed
  std::shared_ptr<Exchange> current_;
  std::function<void()> on_close_;
  std::string cut_message_;
  std::deque<std::string> write_queue_;
  size_t pending_bytes_ = 0;
  size_t body_reserved_ = 0;  // of Impl::total_body_bytes, for the request being read or handled
  bool writing_ = false;
  bool end_after_write_ = false;
};

class Exchange : public HttpExchange {
 public:
  Exchange(std::shared_ptr<Session> session, uint64_t gen, HttpRequest request)
      : session_(std::move(session)), gen_(gen), request_(std::move(request)) {}
  const HttpRequest& request() const override { return request_; }
  void respond(HttpResponse response) override {
    asio::post(session_->executor(),
               [s = session_, g = gen_, r = std::move(response)]() mutable { s->respond(g, std::move(r)); });
  }
  void start_stream(int status, std::string content_type) override {
    asio::post(session_->executor(), [s = session_, g = gen_, status, c = std::move(content_type)]() mutable {
      s->start_stream(g, status, std::move(c));
    });
  }
  void send(std::string data) override {
    asio::post(session_->executor(),
               [s = session_, g = gen_, d = std::move(data)]() mutable { s->send(g, std::move(d)); });
  }
  void end_stream() override {
    asio::post(session_->executor(), [s = session_, g = gen_] { s->end_stream(g); });
  }
  void post(std::function<void()> fn) override {
    // The handler's own work on the strand: whatever it throws ends this request with a 500, not the server.
    asio::post(session_->executor(), [s = session_, g = gen_, f = std::move(fn)] {
      try {
        f();
      } catch (const std::exception& e) {
        s->fail_in_flight(g, e.what());
      } catch (...) {
        s->fail_in_flight(g, "unknown exception");
      }
    });
  }
  void set_on_close(std::function<void()> fn) override {
    asio::dispatch(session_->executor(),
                   [s = session_, g = gen_, f = std::move(fn)]() mutable { s->set_on_close(g, std::move(f)); });
  }
  void set_cut_message(std::string data) override {
    asio::dispatch(session_->executor(),
                   [s = session_, g = gen_, d = std::move(data)]() mutable { s->set_cut_message(g, std::move(d)); });
  }
  bool closed() const override { return closed_.load(); }
  void mark_closed() { closed_ = true; }

 private:
  std::shared_ptr<Session> session_;
  uint64_t gen_;
  HttpRequest request_;
  std::atomic<bool> closed_{false};
};

void Session::read_request() {
  state_ = State::kReading;
  if (server_.stopping) {
    disconnect();
    return;
  }
  if (generation_ == 0 || buffer_.size() > 0) {
    read_request_body_and_headers();
    return;
  }
  // Keep-alive: the idle timeout until the next request's first bytes, then the read timeout for the whole of
  // it, as for a connection's first request (a client may not trickle a request for the idle timeout).
  stream_.expires_after(server_.options.idle_timeout);
  stream_.async_read_some(buffer_.prepare(std::min<size_t>(4096, buffer_.max_size())),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (self->state_ != State::kReading) return;
                            if (ec) {
                              self->on_read(ec);
                              return;
                            }
                            self->buffer_.commit(n);
                            self->read_request_body_and_headers();
                          });
}

void Session::read_request_body_and_headers() {
  parser_.emplace();
  parser_->header_limit(uint32_t(server_.options.max_header_bytes));
  parser_->body_limit(server_.options.max_body_bytes);
  stream_.expires_after(server_.options.read_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Session::on_header(error_code ec) {
  if (state_ == State::kClosed) return;
  if (ec) {
    on_read(ec);
    return;
  }
  // The body's memory is reserved before it is read, so many large uploads at once cannot exhaust the server.
  const size_t need = parser_->content_length() ? size_t(*parser_->content_length())
                      : parser_->chunked()      ? server_.options.max_body_bytes
                                                : 0;
  release_body();
  if (need > 0) {
    if (!server_.reserve_body(need)) {
      fail_request(503, "the server is receiving too many large requests; retry later");
      return;
    }
    body_reserved_ = need;
  }
  if (parser_->is_done()) {
    on_read({});
    return;
  }
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
}

void Session::on_read(error_code ec) {
  if (state_ == State::kClosed) return;
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    disconnect();
    return;
  }
  if (ec == http::error::body_limit) {
    fail_request(413, fmt::format("the request body is larger than {} bytes", server_.options.max_body_bytes));
    return;
  }
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    fail_request(431, fmt::format("the request's headers (or a chunked body's trailer) are larger than {} bytes",
                                  server_.options.max_header_bytes));
    return;
  }
  if (ec) {
    fail_request(400, "malformed HTTP request: " + ec.message());
    return;
  }
  stream_.expires_never();
  try {
    dispatch_request();
  } catch (const std::exception& e) {
    fail_in_flight(generation_, e.what());
  } catch (...) {
    fail_in_flight(generation_, "unknown exception");
  }
}

void Session::dispatch_request() {
  http::request<http::string_body> msg = parser_->release();
  parser_.reset();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.path = req.target.substr(0, req.target.find('?'));
  for (const auto& field : msg)
    req.headers[lower(std::string_view(field.name_string().data(), field.name_string().size()))] =
        std::string(field.value());
  req.body = std::move(msg.body());
  req.remote = remote_;
  req.received = std::chrono::steady_clock::now();
  keep_alive_ = msg.keep_alive() && !server_.stopping;
  http_version_ = msg.version() >= 11 ? 11 : 10;
  head_request_ = msg.method() == http::verb::head;
  raw_stream_ = false;
  cors_headers_.clear();
  if (const std::string& origin = req.header("origin"); !origin.empty() && server_.origin_allowed(origin)) {
    cors_headers_.emplace_back("Access-Control-Allow-Origin", origin);
    cors_headers_.emplace_back("Vary", "Origin");
  }
  if (msg.method() == http::verb::options && answer_preflight(msg)) return;
  ++generation_;
  on_close_ = nullptr;
  cut_message_.clear();
  current_ = std::make_shared<Exchange>(shared_from_this(), generation_, std::move(req));
  state_ = State::kHandling;
  watch_for_disconnect();
  if (peer_write_closed_) poll_peer();
  server_.handler(current_);
}

bool Session::answer_preflight(const http::request<http::string_body>& msg) {
  // A CORS preflight: the browser asks whether a cross-origin request may be sent.
  if (msg[http::field::access_control_request_method].empty()) return false;
  const std::string origin(msg[http::field::origin]);
  ++generation_;
  state_ = State::kResponding;
  end_after_write_ = true;
  if (cors_headers_.empty()) {
    const std::string why = fmt::format("the origin '{}' may not call this server (see --allowed-origins)", origin);
    server_.refused(403, why, "OPTIONS", std::string(msg.target()), remote_);
    queue(serialize(server_.error(403, why), keep_alive_, true));
    return true;
  }
  HttpResponse r;
  r.status = 204;
  r.content_type = "text/plain";
  HeaderList h = cors_headers_;
  h.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string asked(msg[http::field::access_control_request_headers]);
  h.emplace_back("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
  h.emplace_back("Access-Control-Max-Age", "600");
  queue(serialize(r, keep_alive_, false, h));
  return true;
}

void Session::fail_in_flight(uint64_t gen, const std::string& what) {
  server_.report_internal_error(fmt::format("while handling a request from {}: {}", remote_, what));
  if (gen != generation_) return;
  if (state_ == State::kHandling) {
    respond(gen, server_.error(500, "internal server error; the server logged the cause", current_path()));
  } else if (state_ == State::kStreaming) {
    keep_alive_ = false;
    if (!raw_stream_) queue("0\r\n\r\n");
    end_after_queue();
  }
}

void Session::watch_for_disconnect() {
  if (peer_write_closed_) return;  // nothing more to read: poll_peer watches instead
  const uint64_t gen = generation_;
  stream_.socket().async_wait(
      tcp::socket::wait_read, asio::bind_executor(executor(), [self = shared_from_this(), gen](error_code ec) {
        if (gen != self->generation_ || self->state_ == State::kReading || self->state_ == State::kClosed) return;
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
          self->disconnect();
          return;
        }
        self->on_readable_while_busy();
      }));
}

void Session::on_readable_while_busy() {
  // A readiness report can be stale (the bytes were taken already), so read without blocking: bytes are a
  // pipelined request, kept for after this response; 0 is the client's FIN; EAGAIN is nothing.
  const size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) return;  // a full buffer of pipelined bytes: look again once this response is done
  const auto space = buffer_.prepare(std::min<size_t>(room, 4096));
  const ssize_t n = ::recv(stream_.socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
  if (n > 0) {
    buffer_.commit(size_t(n));
    watch_for_disconnect();
  } else if (n == 0) {
    on_peer_write_closed();
  } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    watch_for_disconnect();
  } else {
    disconnect();
  }
}

void Session::on_peer_write_closed() {
  // A FIN is a client that half-closed after its request (it still reads) or one that is gone; only a write
  // tells them apart: a closed socket answers it with a reset. A stream writes anyway; a whole response is
  // preceded by an interim 100 Continue, which HTTP/1.1 clients must accept (RFC 9110, 15.2).
  peer_write_closed_ = true;
  if (state_ == State::kHandling && http_version_ == 11 && pending_bytes_ == 0) queue("HTTP/1.1 100 Continue\r\n\r\n");
  poll_peer();
}

void Session::poll_peer() {
  if (polling_peer_ || state_ == State::kClosed) return;
  polling_peer_ = true;
  if (!peer_poll_timer_) peer_poll_timer_.emplace(stream_.get_executor());
  peer_poll_timer_->expires_after(kPeerPollInterval);
  peer_poll_timer_->async_wait([self = shared_from_this()](error_code ec) {
    self->polling_peer_ = false;
    if (ec || self->state_ == State::kClosed) return;
    if (self->state_ != State::kReading) {
      tcp_info info{};
      socklen_t len = sizeof(info);
      if (::getsockopt(self->stream_.socket().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
          info.tcpi_state == TCP_CLOSE) {
        self->disconnect();  // the reset came: the client is gone
        return;
      }
    }
    self->poll_peer();
  });
}

std::string_view Session::current_path() const {
  return current_ ? std::string_view(current_->request().path) : std::string_view();
}

void Session::fail_request(int status, const std::string& message) {
  std::string method, target;
  HeaderList cors;
  if (parser_) {  // what of the request was parsed before the error (maybe nothing)
    const auto& head = parser_->get();
    method = std::string(head.method_string());
    target = std::string(head.target());
    if (const std::string origin(head[http::field::origin]); !origin.empty() && server_.origin_allowed(origin))
      cors = {{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"}};
  }
  server_.refused(status, message, method, target, remote_);
  keep_alive_ = false;
  ++generation_;
  state_ = State::kResponding;
  end_after_write_ = true;
  queue(serialize(server_.error(status, message, std::string_view(target).substr(0, target.find('?'))), false, true,
                  cors));
}

void Session::respond(uint64_t gen, HttpResponse response) {
  if (gen != generation_ || state_ != State::kHandling) return;
  if (response.body.size() >= kLargeResponseBytes &&
      server_.total_pending_bytes.load() + response.body.size() > server_.options.max_total_pending_bytes) {
    server_.report_internal_error(
        fmt::format("a {}-byte response to {} was replaced by a 503: {} bytes are queued "
                    "for slow readers",
                    response.body.size(), remote_, server_.total_pending_bytes.load()));
    response =
        server_.error(503, "the server holds too much unsent output for slow clients; retry later", current_path());
  }
  state_ = State::kResponding;
  end_after_write_ = true;
  queue(serialize(response, keep_alive_, !head_request_, cors_headers_));
}

void Session::start_stream(uint64_t gen, int status, std::string content_type) {
  if (gen != generation_ || state_ != State::kHandling) return;
  state_ = State::kStreaming;
  std::string extra;
  for (const auto& [k, v] : cors_headers_) extra += fmt::format("{}: {}\r\n", k, v);
  if (http_version_ < 11) {
    // HTTP/1.0 has no chunked encoding: the body runs to the connection's close.
    raw_stream_ = true;
    keep_alive_ = false;
    queue(fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n{}Connection: close\r\n\r\n",
                      status, std::string(http::obsolete_reason(http::status(status))), content_type, extra));
    return;
  }
  queue(
      fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n{}Transfer-Encoding: "
                  "chunked\r\nConnection: {}\r\n\r\n",
                  status, std::string(http::obsolete_reason(http::status(status))), content_type, extra,
                  keep_alive_ ? "keep-alive" : "close"));
}

void Session::send(uint64_t gen, std::string data) {
  if (gen != generation_ || state_ != State::kStreaming || data.empty()) return;
  std::string framed = raw_stream_ ? std::move(data) : chunk(data);
  const bool over_own = pending_bytes_ + framed.size() > server_.options.max_stream_pending_bytes;
  const bool over_total = pending_bytes_ >= kFairStreamShare &&
                          server_.total_pending_bytes.load() + framed.size() > server_.options.max_total_pending_bytes;
  if (over_own || over_total) {
    cut_stream();
    return;
  }
  queue(std::move(framed));
}

void Session::cut_stream() {
  // A reader this far behind would hold the engine's output in memory without bound: end its stream.
  state_ = State::kResponding;
  keep_alive_ = false;
  if (on_close_) std::exchange(on_close_, nullptr)();
  if (current_) current_->mark_closed();
  if (!cut_message_.empty()) queue(raw_stream_ ? cut_message_ : chunk(cut_message_));
  if (!raw_stream_) queue("0\r\n\r\n");
  end_after_queue();
}

void Session::end_stream(uint64_t gen) {
  if (gen != generation_ || state_ != State::kStreaming) return;
  if (!raw_stream_) queue("0\r\n\r\n");
  end_after_queue();
}

void Session::end_after_queue() {
  state_ = State::kResponding;
  end_after_write_ = true;
  if (!writing_ && write_queue_.empty()) response_done();
}

void Session::queue(std::string bytes) {
  pending_bytes_ += bytes.size();
  server_.total_pending_bytes += bytes.size();
  write_queue_.push_back(std::move(bytes));
  do_write();
}

void Session::do_write() {
  if (writing_ || write_queue_.empty() || state_ == State::kClosed) return;
  writing_ = true;
  stream_.expires_after(server_.options.write_timeout);
  asio::async_write(stream_, asio::buffer(write_queue_.front()),
                    [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
}

void Session::on_written(error_code ec) {
  writing_ = false;
  if (state_ == State::kClosed) return;
  if (ec) {
    disconnect();
    return;
  }
  pending_bytes_ -= write_queue_.front().size();
  server_.total_pending_bytes -= write_queue_.front().size();
  write_queue_.pop_front();
  if (!write_queue_.empty()) {
    do_write();
    return;
  }
  stream_.expires_never();
  if (end_after_write_ && state_ == State::kResponding) response_done();
}

void Session::response_done() {
  end_after_write_ = false;
  release_body();
  on_close_ = nullptr;
  if (current_) current_->mark_closed();
  current_.reset();
  if (keep_alive_ && !server_.stopping) {
    read_request();
    return;
  }
  error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  state_ = State::kClosed;
  stream_.close();
  if (peer_poll_timer_) peer_poll_timer_->cancel();
}

void Session::disconnect() {
  if (state_ == State::kClosed) return;
  const bool was_pending = response_pending();
  state_ = State::kClosed;
  if (current_) current_->mark_closed();
  current_.reset();
  std::function<void()> on_close = std::exchange(on_close_, nullptr);
  write_queue_.clear();
  server_.total_pending_bytes -= pending_bytes_;
  pending_bytes_ = 0;
  release_body();
  error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  if (peer_poll_timer_) peer_poll_timer_->cancel();
  if (was_pending && on_close) on_close();
}

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != asio::error::operation_aborted && !stopping) accept();
      return;
    }
    if (stopping) return;
    error_code ignored;
    const tcp::endpoint peer = socket.remote_endpoint(ignored);
    std::string address = ignored ? std::string("?") : peer.address().to_string();
    if (!admit(address)) {
      // Refused before any parsing: one small write into a fresh socket's buffer does not block.
      const std::string bytes = serialize(error(503, "too many connections; retry later"), false, true);
      asio::write(socket, asio::buffer(bytes), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      accept();
      return;
    }
    socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks are small and latency matters
    auto session = std::make_shared<Session>(std::move(socket), *this, std::move(address));
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      std::erase_if(sessions, [](const std::weak_ptr<Session>& w) { return w.expired(); });
      sessions.push_back(session);
    }
    session->start();
    accept();
  });
}

void HttpServer::Impl::run_io() {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      report_internal_error(fmt::format("an I/O handler threw: {}", e.what()));
    } catch (...) {
      report_internal_error("an I/O handler threw an unknown exception");
    }
  }
}

Result<std::unique_ptr<HttpServer>> HttpServer::create(const HttpServerOptions& options, Handler handler) {
  if (options.max_header_bytes < 1024 || options.max_header_bytes > kMaxHeaderLimit)
    return make_error(
        fmt::format("the header limit must be in 1024..{} bytes, got {}", kMaxHeaderLimit, options.max_header_bytes),
        StatusCode::kInvalidArgument);
  if (options.max_connections_per_address < 1)
    return make_error("the per-address connection cap must be at least 1", StatusCode::kInvalidArgument);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(options.host, ec);
  if (ec) return make_error(fmt::format("--host {} is not an IP address", options.host), StatusCode::kInvalidArgument);
  if (options.port < 0 || options.port > 65535)
    return make_error(fmt::format("--port must be in 0..65535, got {}", options.port), StatusCode::kInvalidArgument);
  const tcp::endpoint endpoint(address, uint16_t(options.port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(fmt::format("cannot listen on {}:{}: {}", options.host, options.port, ec.message()),
                      StatusCode::kUnavailable);
  impl->accept();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
  // Handlers still queued hold sessions; destroying the io_context destroys them before the sockets' service.
}

int HttpServer::port() const {
  error_code ec;
  const tcp::endpoint ep = impl_->acceptor.local_endpoint(ec);
  return ec ? -1 : int(ep.port());
}

void HttpServer::run() {
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.num_io_threads; ++i) threads.emplace_back([this] { impl_->run_io(); });
  impl_->run_io();
  for (std::thread& t : threads) t.join();
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->ioc, [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& t : impl->tickers) t->timer.cancel();
    for (auto& w : impl->signal_watches) w->set.cancel(ignored);
    // The sessions are taken under the lock but told to close, and let go, outside it: dropping the last reference
    // to a session (its request finished meanwhile on a worker) runs its destructor, which takes the same lock.
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(impl->sessions_mutex);
      for (const std::weak_ptr<Session>& w : impl->sessions)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (const std::shared_ptr<Session>& s : live) s->close_when_idle();
    live.clear();
    // Responses already queued get a moment to reach their clients; then the loop ends whatever is left.
    auto timer = std::make_shared<asio::steady_timer>(impl->ioc);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [impl, timer, deadline, weak = std::weak_ptr<std::function<void()>>(poll)] {
      if (impl->num_connections.load() == 0 || std::chrono::steady_clock::now() > deadline) {
        impl->ioc.stop();
        return;
      }
      timer->expires_after(std::chrono::milliseconds(20));
      timer->async_wait([weak](error_code) {
        if (auto p = weak.lock()) (*p)();
      });
    };
    impl->stop_poll = poll;
    (*poll)();
  });
}

void HttpServer::every(std::chrono::milliseconds interval, std::function<void()> fn) {
  auto ticker = std::make_unique<Ticker>(impl_->ioc, interval, std::move(fn));
  ticker->arm();
  impl_->tickers.push_back(std::move(ticker));
}

void HttpServer::on_signals(std::vector<int> signals, std::function<void(int)> fn) {
  auto watch = std::make_unique<SignalWatch>(impl_->ioc, std::move(fn));
  for (int s : signals) watch->set.add(s);
  watch->arm();
  impl_->signal_watches.push_back(std::move(watch));
}

int HttpServer::num_connections() const { return impl_->num_connections.load(); }

}  // namespace pagoda::server
