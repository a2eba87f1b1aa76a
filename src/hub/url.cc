// URL parsing for the hub client: just enough of RFC 3986 for the Hub's and a mirror's URLs and their redirects.
#include "hub/url.h"

#include <fmt/format.h>

#include <cctype>

namespace pagoda::hub {

std::string Url::origin() const {
  const bool default_port = (scheme == "http" && port == "80") || (scheme == "https" && port == "443");
  return scheme + "://" + host + (default_port ? "" : ":" + port);
}

Result<Url> parse_url(std::string_view text) {
  Url url;
  const size_t colon = text.find("://");
  if (colon == std::string_view::npos) return make_error(fmt::format("'{}' is not an http(s) URL", text));
  url.scheme = std::string(text.substr(0, colon));
  for (char& c : url.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (url.scheme != "http" && url.scheme != "https")
    return make_error(fmt::format("'{}': only http and https URLs are supported", text));
  std::string_view rest = text.substr(colon + 3);
  const size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  url.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!url.target.empty() && url.target[0] != '/') url.target = "/" + url.target;
  if (const size_t hash = url.target.find('#'); hash != std::string::npos) url.target.resize(hash);
  if (authority.find('@') != std::string_view::npos)
    return make_error(fmt::format("'{}': credentials in a URL are not supported (use HF_TOKEN)", text));
  url.port = url.scheme == "https" ? "443" : "80";
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return make_error(fmt::format("'{}': bad IPv6 host", text));
    url.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority[0] != ':') return make_error(fmt::format("'{}': bad host", text));
    if (!authority.empty()) url.port = std::string(authority.substr(1));
  } else {
    const size_t port = authority.rfind(':');
    url.host = std::string(authority.substr(0, port));
    if (port != std::string_view::npos) url.port = std::string(authority.substr(port + 1));
  }
  if (url.host.empty()) return make_error(fmt::format("'{}' has no host", text));
  if (url.port.empty() || url.port.size() > 5 ||
      url.port.find_first_not_of("0123456789") != std::string::npos || std::stoi(url.port) == 0 ||
      std::stoi(url.port) > 65535)
    return make_error(fmt::format("'{}' has a bad port", text));
  return url;
}

Result<Url> resolve_location(const Url& base, std::string_view location) {
  if (location.find("://") != std::string_view::npos) return parse_url(location);
  if (location.starts_with("//")) return parse_url(base.scheme + ":" + std::string(location));
  Url url = base;
  if (location.starts_with("/")) {
    url.target = std::string(location);
  } else {
    // Relative to the base path's folder.
    const std::string path = base.target.substr(0, base.target.find('?'));
    url.target = path.substr(0, path.rfind('/') + 1) + std::string(location);
  }
  return url;
}

std::string encode_path(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace pagoda::hub
