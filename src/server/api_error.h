// ApiError: an OpenAI-style error, {"error": {"message", "type", "param", "code"}}, with the HTTP status it is
// sent with. A plain value; the helpers name the usual kinds.
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace pagoda::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::optional<std::string> param;  // the offending field, when one is to blame
  std::optional<std::string> code;

  std::string to_json() const;
  // With x-should-retry: false on the 4xx a retry cannot fix (all but 409 and 429).
  HttpResponse to_response() const;
};

ApiError invalid_request(std::string message, std::optional<std::string> param = std::nullopt);
// 405: `path` answers other methods than `method`; `allowed` names them ("GET", "POST").
ApiError method_not_allowed(std::string_view path, std::string_view method, std::string_view allowed);
// Status codes map to HTTP: kInvalidArgument 400, kContextLengthExceeded 400 with code "context_length_exceeded",
// kNotFound 404, kResourceExhausted 429, kUnavailable 503, anything else 500.
ApiError api_error_from_status(const Status& status);

}  // namespace pagoda::server
