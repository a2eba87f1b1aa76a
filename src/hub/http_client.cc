// The hub's HTTP/1.1 client on Boost.Beast: each step is an asynchronous operation run to completion on a private
// io_context, so that the stream's expiry (beast::tcp_stream) bounds it; TLS through Asio's OpenSSL stream.
#include "hub/http_client.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <strings.h>

#include <array>
#include <limits>

namespace pagoda::hub {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Runs one asynchronous operation started by `start(handler)` until it completes; returns its error.
template <class Start>
beast::error_code run_op(asio::io_context& ioc, Start start) {
  beast::error_code result;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

class Exchange {
 public:
  Exchange(const HttpRequest& request, const HttpLimits& limits) : request_(request), limits_(limits) {}

  template <class Stream>
  Result<HttpResponse> over(asio::io_context& ioc, Stream& stream, beast::tcp_stream& lowest) {
    const Url& url = request_.url;
    http::request<http::empty_body> req{request_.method == "HEAD" ? http::verb::head : http::verb::get, url.target,
                                        11};
    const bool default_port = (url.scheme == "http" && url.port == "80") || (url.scheme == "https" && url.port == "443");
    req.set(http::field::host, default_port ? url.host : url.host + ":" + url.port);
    req.set(http::field::user_agent, "pagoda");
    for (const auto& [name, value] : request_.headers) req.set(name, value);
    lowest.expires_after(limits_.timeout);
    if (auto ec = run_op(ioc, [&](auto h) { http::async_write(stream, req, h); }))
      return fail("sending the request", ec);

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.header_limit(limits_.header_bytes);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // bounded below: in memory by memory_body_bytes, a sink by its own checks
    if (request_.method == "HEAD") parser.skip(true);
    lowest.expires_after(limits_.timeout);
    if (auto ec = run_op(ioc, [&](auto h) { http::async_read_header(stream, buffer, parser, h); }))
      return fail("reading the response header", ec);

    HttpResponse response;
    response.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) response.headers.emplace_back(field.name_string(), field.value());
    const bool to_sink = request_.sink && response.status >= 200 && response.status < 300;
    if (to_sink && request_.on_header) PAGODA_RETURN_IF_ERROR(request_.on_header(response));
    std::array<char, 64 * 1024> chunk;
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      lowest.expires_after(limits_.timeout);
      beast::error_code ec = run_op(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); });
      if (ec == http::error::need_buffer) ec = {};
      const size_t got = chunk.size() - parser.get().body().size;
      if (got > 0) {
        if (to_sink) {
          PAGODA_RETURN_IF_ERROR(request_.sink(std::span<const char>(chunk.data(), got)));
        } else {
          if (response.body.size() + got > limits_.memory_body_bytes)
            return make_error(fmt::format("{}: the response body exceeds {} bytes", url.str(),
                                          limits_.memory_body_bytes));
          response.body.append(chunk.data(), got);
        }
      }
      if (ec) return fail("reading the response body", ec);
    }
    return response;
  }

  Status fail(std::string_view step, const beast::error_code& ec) const {
    const bool timeout = ec == beast::error::timeout;
    return make_error(fmt::format("{} {}: {} failed: {}", request_.method, request_.url.str(), step,
                                  timeout ? "timed out" : ec.message()),
                      StatusCode::kUnavailable);
  }

 private:
  const HttpRequest& request_;
  const HttpLimits& limits_;
};

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0) return value;
  }
  return "";
}

Result<HttpResponse> http_request(const HttpRequest& request, const HttpLimits& limits) {
  if (request.method != "GET" && request.method != "HEAD")
    return make_error("http_request: only GET and HEAD are supported");
  const Url& url = request.url;
  Exchange exchange(request, limits);
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  tcp::resolver::results_type endpoints;
  beast::error_code resolve_ec;
  // The resolver has no expiry of its own; a stuck lookup is bounded by running the context for the timeout.
  resolver.async_resolve(url.host, url.port, [&](beast::error_code ec, tcp::resolver::results_type r) {
    resolve_ec = ec;
    endpoints = std::move(r);
  });
  ioc.run_for(limits.timeout);
  if (!ioc.stopped()) {
    resolver.cancel();
    return make_error(fmt::format("{} {}: resolving {} timed out", request.method, url.str(), url.host),
                      StatusCode::kUnavailable);
  }
  if (resolve_ec) return exchange.fail("resolving " + url.host, resolve_ec);

  if (url.scheme == "http") {
    beast::tcp_stream stream(ioc);
    stream.expires_after(limits.timeout);
    if (auto ec = run_op(ioc, [&](auto h) { stream.async_connect(endpoints, h); })) return exchange.fail("connecting", ec);
    Result<HttpResponse> response = exchange.over(ioc, stream, stream);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return response;
  }

  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_default_verify_paths();
  tls.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, tls);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str()))
    return make_error(fmt::format("{}: cannot set the TLS server name", url.str()));
  stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
  beast::tcp_stream& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(limits.timeout);
  if (auto ec = run_op(ioc, [&](auto h) { lowest.async_connect(endpoints, h); })) return exchange.fail("connecting", ec);
  lowest.expires_after(limits.timeout);
  if (auto ec = run_op(ioc, [&](auto h) { stream.async_handshake(asio::ssl::stream_base::client, h); }))
    return exchange.fail("the TLS handshake", ec);
  Result<HttpResponse> response = exchange.over(ioc, stream, lowest);
  beast::error_code ignored;
  lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return response;
}

}  // namespace pagoda::hub
