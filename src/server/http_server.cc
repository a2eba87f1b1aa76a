// HttpServer: the accept loop, one Session per connection (read a request -> hand it out -> write what the
// handler sends -> next request), tickers and signals, all on one io_context run by a few threads. A Session's
// work runs on its strand; an Exchange is the handler's thread-safe way to post onto it.
#include "server/http_server.h"

#include <fmt/format.h>

#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string serialize(const HttpResponse& r, bool keep_alive) {
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
                                 r.status, std::string(http::obsolete_reason(http::status(r.status))), r.content_type,
                                 r.body.size(), keep_alive ? "keep-alive" : "close");
  for (const auto& [k, v] : r.headers) head += fmt::format("{}: {}\r\n", k, v);
  head += "\r\n";
  head += r.body;
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
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Session>> sessions;  // for stop(): closed sessions are pruned on accept
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::unique_ptr<Ticker>> tickers;
  std::vector<std::unique_ptr<SignalWatch>> signal_watches;
  std::shared_ptr<std::function<void()>> stop_poll;  // stop()'s wait for open connections

  HttpResponse error(int status, const std::string& message) const {
    if (options.error_response) return options.error_response(status, message);
    HttpResponse r;
    r.status = status;
    r.content_type = "text/plain";
    r.body = message + "\n";
    return r;
  }
  void accept();
};

class Exchange;

// One TCP connection. Invariant: at most one request is in flight (generation_ names it); every member is
// touched only on the strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server) : stream_(std::move(socket)), server_(server) {
    ++server_.num_connections;
    error_code ec;
    const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }
  ~Session() { --server_.num_connections; }

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

 private:
  enum class State { kReading, kHandling, kStreaming, kResponding, kClosed };

  void read_request();
  void on_read(error_code ec);
  void watch_for_disconnect();
  void queue(std::string bytes);
  void do_write();
  void on_written(error_code ec);
  void response_done();
  void disconnect();  // the client is gone (or we end the connection): fire on_close, close the socket
  void fail_request(int status, const std::string& message);

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  std::string remote_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t generation_ = 0;
  State state_ = State::kReading;
  bool keep_alive_ = true;
  std::shared_ptr<Exchange> current_;
  std::function<void()> on_close_;
  std::string cut_message_;
  std::deque<std::string> write_queue_;
  size_t pending_bytes_ = 0;
  bool writing_ = false;
  bool end_after_write_ = false;
  bool shut_after_write_ = false;  // close the connection once the queue is written
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
  void post(std::function<void()> fn) override { asio::post(session_->executor(), std::move(fn)); }
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
  parser_.emplace();
  parser_->header_limit(uint32_t(server_.options.max_header_bytes));
  parser_->body_limit(server_.options.max_body_bytes);
  stream_.expires_after(generation_ == 0 ? server_.options.read_timeout : server_.options.idle_timeout);
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
  if (ec == http::error::header_limit) {
    fail_request(431, "the request headers are too large");
    return;
  }
  if (ec) {
    fail_request(400, "malformed HTTP request: " + ec.message());
    return;
  }
  stream_.expires_never();
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
  keep_alive_ = msg.keep_alive() && !server_.stopping;
  ++generation_;
  on_close_ = nullptr;
  cut_message_.clear();
  current_ = std::make_shared<Exchange>(shared_from_this(), generation_, std::move(req));
  state_ = State::kHandling;
  watch_for_disconnect();
  server_.handler(current_);
}

void Session::watch_for_disconnect() {
  const uint64_t gen = generation_;
  stream_.socket().async_wait(
      tcp::socket::wait_read, asio::bind_executor(executor(), [self = shared_from_this(), gen](error_code ec) {
        if (gen != self->generation_ || self->state_ == State::kReading || self->state_ == State::kClosed) return;
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
          self->disconnect();
          return;
        }
        // A readiness report can be stale (another thread's read already took the bytes), so look without
        // taking: 0 is the peer's FIN, bytes are a pipelined request (read after this one), EAGAIN is nothing.
        char byte;
        const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          self->disconnect();
        } else if (n < 0) {
          self->watch_for_disconnect();
        }
      }));
}

void Session::fail_request(int status, const std::string& message) {
  keep_alive_ = false;
  ++generation_;
  state_ = State::kResponding;
  end_after_write_ = true;
  queue(serialize(server_.error(status, message), false));
}

void Session::respond(uint64_t gen, HttpResponse response) {
  if (gen != generation_ || state_ != State::kHandling) return;
  state_ = State::kResponding;
  end_after_write_ = true;
  queue(serialize(response, keep_alive_));
}

void Session::start_stream(uint64_t gen, int status, std::string content_type) {
  if (gen != generation_ || state_ != State::kHandling) return;
  state_ = State::kStreaming;
  queue(
      fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\nTransfer-Encoding: "
                  "chunked\r\nConnection: {}\r\n\r\n",
                  status, std::string(http::obsolete_reason(http::status(status))), content_type,
                  keep_alive_ ? "keep-alive" : "close"));
}

void Session::send(uint64_t gen, std::string data) {
  if (gen != generation_ || state_ != State::kStreaming || data.empty()) return;
  std::string framed = chunk(data);
  if (pending_bytes_ + framed.size() > server_.options.max_stream_pending_bytes) {
    // A reader this far behind would hold the engine's output in memory without bound: end its stream.
    state_ = State::kResponding;
    keep_alive_ = false;
    end_after_write_ = true;
    if (on_close_) std::exchange(on_close_, nullptr)();
    if (current_) current_->mark_closed();
    if (!cut_message_.empty()) queue(chunk(cut_message_));
    queue("0\r\n\r\n");
    return;
  }
  queue(std::move(framed));
}

void Session::end_stream(uint64_t gen) {
  if (gen != generation_ || state_ != State::kStreaming) return;
  state_ = State::kResponding;
  end_after_write_ = true;
  queue("0\r\n\r\n");
}

void Session::queue(std::string bytes) {
  pending_bytes_ += bytes.size();
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
}

void Session::disconnect() {
  if (state_ == State::kClosed) return;
  const bool response_pending =
      state_ == State::kHandling || state_ == State::kStreaming || (state_ == State::kResponding && end_after_write_);
  state_ = State::kClosed;
  if (current_) current_->mark_closed();
  current_.reset();
  std::function<void()> on_close = std::exchange(on_close_, nullptr);
  write_queue_.clear();
  pending_bytes_ = 0;
  error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  if (response_pending && on_close) on_close();
}

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != asio::error::operation_aborted && !stopping) accept();
      return;
    }
    if (stopping) return;
    if (num_connections.load() >= options.max_connections) {
      // Refused before any parsing: one small write into a fresh socket's buffer does not block.
      const std::string bytes = serialize(error(503, "too many connections; retry later"), false);
      error_code ignored;
      asio::write(socket, asio::buffer(bytes), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      accept();
      return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks are small and latency matters
    auto session = std::make_shared<Session>(std::move(socket), *this);
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      std::erase_if(sessions, [](const std::weak_ptr<Session>& w) { return w.expired(); });
      sessions.push_back(session);
    }
    session->start();
    accept();
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::create(const HttpServerOptions& options, Handler handler) {
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
  for (int i = 1; i < impl_->options.num_io_threads; ++i) threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (std::thread& t : threads) t.join();
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->ioc, [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& t : impl->tickers) t->timer.cancel();
    for (auto& w : impl->signal_watches) w->set.cancel(ignored);
    {
      std::lock_guard<std::mutex> lock(impl->sessions_mutex);
      for (const std::weak_ptr<Session>& w : impl->sessions)
        if (auto s = w.lock()) s->close_when_idle();
    }
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
