// HttpRequest / HttpResponse: what the HTTP layer hands a handler and takes back. Plain values: the handlers
// (OpenAI API, metrics, health) never see a socket or a parser.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // as sent: path and query
  std::string path;                            // target without the query
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote;                              // "ip:port" of the client
  std::chrono::steady_clock::time_point received;  // when its last byte arrived

  // The header's value, or "" when absent; `name` lower-case.
  const std::string& header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

}  // namespace pagoda::server
