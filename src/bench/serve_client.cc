// The serving benchmark's HTTP client: one coroutine per request on a single-threaded io_context, a FIFO
// semaphore for --max-concurrency, Beast's parser reading the SSE body piece by piece as it arrives.
#include "bench/serve_client.h"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <nlohmann/json.hpp>

#include "bench/sse_data_reader.h"
#include "core/json_text.h"

namespace pagoda::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using error_code = boost::system::error_code;

Result<ServeTarget> parse_base_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return make_error(fmt::format("--base-url '{}' must start with http:// (https is not supported)", url));
  std::string rest = url.substr(scheme.size());
  ServeTarget t;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    t.path_prefix = rest.substr(slash);
    rest.resize(slash);
    while (!t.path_prefix.empty() && t.path_prefix.back() == '/') t.path_prefix.pop_back();
  }
  t.port = "80";
  if (size_t colon = rest.rfind(':'); colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    t.port = rest.substr(colon + 1);
    rest.resize(colon);
    if (t.port.empty() || t.port.find_first_not_of("0123456789") != std::string::npos || t.port.size() > 5 ||
        std::stoi(t.port) < 1 || std::stoi(t.port) > 65535)
      return make_error(fmt::format("--base-url '{}': the port must be a number in [1, 65535]", url));
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') rest = rest.substr(1, rest.size() - 2);
  if (rest.empty()) return make_error(fmt::format("--base-url '{}' has no host", url));
  t.host = rest;
  return t;
}

std::string serve_request_body(const ServeClientOptions& options, const ServePrompt& prompt) {
  json body = {{"max_tokens", prompt.output_len},
               {"temperature", 0.0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"ignore_eos", true}};
  if (options.model) body["model"] = *options.model;
  const bool chat = options.endpoint.find("chat") != std::string::npos;
  if (chat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", prompt.text}}});
  } else if (!prompt.text.empty()) {
    body["prompt"] = prompt.text;
  } else {
    body["prompt"] = prompt.token_ids;
  }
  // A dataset file's text may hold invalid UTF-8; it goes out as U+FFFD rather than failing the request.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// A FIFO counting semaphore for coroutines on one thread: release() hands the permit straight to the oldest
// waiter, so arrivals are served in order.
class AsyncSemaphore {
 public:
  explicit AsyncSemaphore(int64_t permits) : available_(permits) {}
  asio::awaitable<void> acquire() {
    if (available_ > 0) {
      --available_;
      co_return;
    }
    asio::steady_timer wake(co_await asio::this_coro::executor, Clock::time_point::max());
    waiters_.push_back(&wake);
    error_code ec;
    co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));  // cancelled = our turn
  }
  void release() {
    if (waiters_.empty()) {
      ++available_;
      return;
    }
    asio::steady_timer* next = waiters_.front();
    waiters_.pop_front();
    next->cancel();
  }

 private:
  int64_t available_;
  std::deque<asio::steady_timer*> waiters_;
};

struct RunState {
  const ServeClientOptions& options;
  std::span<const ServePrompt> prompts;
  const std::function<void(int32_t, int32_t)>& on_done;
  Clock::time_point start;
  AsyncSemaphore semaphore;
  std::vector<ServeRequestRecord> records;
  int32_t num_done = 0;
  Clock::time_point last_done;
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The content of a streamed chunk's first choice (completion text or chat delta); "" when none.
std::string chunk_content(const json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return {};
  const json& choice = (*choices)[0];
  if (auto text = choice.find("text"); text != choice.end() && text->is_string()) return text->get<std::string>();
  if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
    for (const char* field : {"content", "reasoning_content"})
      if (auto c = delta->find(field); c != delta->end() && c->is_string() && !c->get<std::string>().empty())
        return c->get<std::string>();
  }
  return {};
}

// Applies one SSE payload to the record; false when the stream reported an error.
bool apply_payload(const std::string& payload, Clock::time_point sent, Clock::time_point now,
                   std::optional<Clock::time_point>& last_content, int32_t& num_chunks, bool& usage_seen,
                   ServeRequestRecord& r) {
  if (payload == "[DONE]") return true;
  Result<json> parsed = parse_untrusted_json(payload);
  const json chunk = parsed.ok() ? std::move(parsed).value() : json();
  if (!chunk.is_object()) {
    r.error = fmt::format("a stream chunk is not a JSON object: {}", payload.substr(0, 200));
    return false;
  }
  if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) {
    r.error = fmt::format("the stream ended with an error: {}", json_excerpt(*err, 300));
    return false;
  }
  if (!chunk_content(chunk).empty()) {
    if (!last_content) {
      r.ttft_s = seconds_between(sent, now);
    } else {
      r.itl_s.push_back(seconds_between(*last_content, now));
    }
    last_content = now;
    ++num_chunks;
  }
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    if (auto c = usage->find("completion_tokens"); c != usage->end() && c->is_number_integer()) {
      r.output_tokens = c->get<int32_t>();
      usage_seen = true;
    }
    if (auto p = usage->find("prompt_tokens"); p != usage->end() && p->is_number_integer() && p->get<int32_t>() > 0)
      r.prompt_len = p->get<int32_t>();
  }
  return true;
}

asio::awaitable<void> send_one(RunState& state, size_t idx) {
  const ServeClientOptions& o = state.options;
  const ServePrompt& prompt = state.prompts[idx];
  ServeRequestRecord& r = state.records[idx];
  r.prompt_len = prompt.prompt_len;
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer arrival(executor);
  arrival.expires_at(state.start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(o.arrival_offsets_s[idx])));
  error_code ec;
  co_await arrival.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_await state.semaphore.acquire();

  const Clock::time_point sent = Clock::now();
  r.send_offset_s = seconds_between(state.start, sent);
  std::optional<Clock::time_point> last_content;
  int32_t num_chunks = 0;
  bool usage_seen = false;
  bool stream_ok = true;
  try {
    tcp::resolver resolver(executor);
    const auto endpoints = co_await resolver.async_resolve(o.target.host, o.target.port, asio::use_awaitable);
    beast::tcp_stream stream(executor);
    stream.expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.request_timeout_s)));
    co_await stream.async_connect(endpoints, asio::use_awaitable);
    stream.socket().set_option(tcp::no_delay(true));

    http::request<http::string_body> req{http::verb::post, o.target.path_prefix + o.endpoint, 11};
    req.set(http::field::host, o.target.host);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    if (o.api_key) req.set(http::field::authorization, "Bearer " + *o.api_key);
    req.body() = serve_request_body(o, prompt);
    req.prepare_payload();
    co_await http::async_write(stream, req, asio::use_awaitable);

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    co_await http::async_read_header(stream, buffer, parser, asio::use_awaitable);
    const int status = parser.get().result_int();
    std::string error_body;
    SseDataReader sse;
    char piece[16384];
    while (!parser.is_done()) {
      parser.get().body().data = piece;
      parser.get().body().size = sizeof piece;
      error_code read_ec;
      co_await http::async_read_some(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, read_ec));
      if (read_ec && read_ec != http::error::need_buffer) throw boost::system::system_error(read_ec);
      // read_some returns as soon as bytes arrive (read would wait for the whole body), so `now` is when
      // these chunks reached the client.
      const Clock::time_point now = Clock::now();
      const std::string_view bytes(piece, sizeof piece - parser.get().body().size);
      if (status != 200) {
        if (error_body.size() < 2000) error_body.append(bytes);
        continue;
      }
      for (const std::string& payload : sse.feed(bytes)) {
        if (stream_ok) stream_ok = apply_payload(payload, sent, now, last_content, num_chunks, usage_seen, r);
      }
    }
    if (status != 200) {
      r.error = fmt::format("HTTP {}: {}", status, error_body.substr(0, 500));
    } else if (stream_ok && !last_content) {
      r.error = "the stream ended without any content";
    } else if (stream_ok) {
      r.success = true;
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  if (last_content) r.e2e_s = seconds_between(sent, *last_content);
  if (!usage_seen) r.output_tokens = num_chunks;
  state.semaphore.release();
  state.last_done = Clock::now();
  ++state.num_done;
  if (state.on_done) state.on_done(state.num_done, int32_t(state.prompts.size()));
}

}  // namespace

Result<std::string> fetch_text(const ServeTarget& target, const std::string& path, double timeout_s) {
  try {
    asio::io_context ioc(1);
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s)));
    stream.connect(resolver.resolve(target.host, target.port));
    http::request<http::empty_body> req{http::verb::get, target.path_prefix + path, 11};
    req.set(http::field::host, target.host);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (res.result_int() != 200) return make_error(fmt::format("GET {}: HTTP {}", path, res.result_int()));
    return std::move(res.body());
  } catch (const std::exception& e) {
    return make_error(fmt::format("GET {}: {}", path, e.what()));
  }
}

ServeRun run_serve_requests(const ServeClientOptions& options, std::span<const ServePrompt> prompts,
                            const std::function<void(int32_t, int32_t)>& on_done) {
  asio::io_context ioc(1);
  const int64_t permits = options.max_concurrency > 0 ? options.max_concurrency : int64_t(prompts.size()) + 1;
  RunState state{options, prompts, on_done, Clock::now(), AsyncSemaphore(permits), {}, 0, {}};
  state.records.resize(prompts.size());
  state.start = Clock::now();
  state.last_done = state.start;
  for (size_t i = 0; i < prompts.size(); ++i) asio::co_spawn(ioc, send_one(state, i), asio::detached);
  ioc.run();
  ServeRun run;
  run.duration_s = seconds_between(state.start, state.last_done);
  run.records = std::move(state.records);
  return run;
}

}  // namespace pagoda::bench
