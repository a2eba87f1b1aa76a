// ApiError: the JSON body and the status mapping.
#include "server/api_error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/json_text.h"

namespace pagoda::server {

std::string ApiError::to_json() const {
  nlohmann::json j = {{"error",
                       {{"message", message},
                        {"type", type},
                        {"param", param ? nlohmann::json(*param) : nlohmann::json(nullptr)},
                        {"code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)}}}};
  return json_text(j);
}

HttpResponse ApiError::to_response() const {
  HttpResponse r;
  r.status = http_status;
  r.body = to_json();
  // The official SDKs retry 408, 409, 429 and 5xx unless told not to: a request that was itself too large, too
  // slow for its deadline or malformed fails the same way again.
  if (http_status < 500 && http_status != 409 && http_status != 429) r.headers.emplace_back("x-should-retry", "false");
  return r;
}

ApiError invalid_request(std::string message, std::optional<std::string> param) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError method_not_allowed(std::string_view path, std::string_view method, std::string_view allowed) {
  ApiError e = invalid_request(fmt::format("{} does not allow {}; use {}", path, method, allowed));
  e.http_status = 405;
  return e;
}

ApiError api_error_from_status(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument: e.http_status = 400; break;
    case StatusCode::kContextLengthExceeded:
      e.http_status = 400;
      e.code = "context_length_exceeded";
      break;
    case StatusCode::kNotFound:
      e.http_status = 404;
      e.type = "not_found_error";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kCancelled:  // work stopped by its deadline or the shutdown
      e.http_status = 503;
      e.type = "service_unavailable_error";
      break;
    case StatusCode::kLimitExceeded: e.http_status = 400; break;  // e.g. the chat template's render budget
    case StatusCode::kUnknown:
      e.http_status = 500;
      e.type = "internal_server_error";
      break;
  }
  return e;
}

}  // namespace pagoda::server
