// json_text: the one way the server writes JSON. Token text can hold partial UTF-8 characters, which
// nlohmann::json's dump() throws on by default; here they become U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pagoda::server {

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pagoda::server
