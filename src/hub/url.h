// Url: an http(s) URL split into what a request needs (scheme, host, port, target), and a redirect's Location
// resolved against the URL it came from. Parsing only; no I/O.
#pragma once

#include <pagoda/status.h>

#include <string>
#include <string_view>

namespace pagoda::hub {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;
  std::string port;    // "80" / "443" when the URL names none
  std::string target;  // path and query, "/" at least

  // scheme://host[:port]
  std::string origin() const;
  std::string str() const { return origin() + target; }
};

// Errors: a scheme other than http/https, no host, a bad port.
Result<Url> parse_url(std::string_view text);
// A Location header: absolute ("https://cdn/..."), scheme-relative ("//cdn/...") or a path ("/a/b"), against `base`.
Result<Url> resolve_location(const Url& base, std::string_view location);
// Percent-encodes a repository file path for a URL path, keeping '/' between its parts.
std::string encode_path(std::string_view path);

}  // namespace pagoda::hub
