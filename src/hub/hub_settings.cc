// The Hugging Face environment variables, read as huggingface_hub's constants.py reads them.
#include "hub/hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace pagoda::hub {
namespace {

bool is_true(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "on" || v == "yes" || v == "true";
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

Result<HubSettings> hub_settings_from_environment(const EnvLookup& getenv) {
  auto value = [&](const char* name) -> std::string {
    std::optional<std::string> v = getenv(name);
    return v ? *v : std::string();
  };
  HubSettings s;
  if (std::string endpoint = value("HF_ENDPOINT"); !endpoint.empty()) {
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    s.endpoint = endpoint;
  }
  s.offline = is_true(value("HF_HUB_OFFLINE"));
  std::string home = value("HF_HOME");
  if (home.empty()) {
    std::string xdg = value("XDG_CACHE_HOME");
    if (xdg.empty() && !value("HOME").empty()) xdg = value("HOME") + "/.cache";
    if (!xdg.empty()) home = xdg + "/huggingface";
  }
  s.cache_dir = value("HF_HUB_CACHE");
  if (s.cache_dir.empty()) {
    if (home.empty()) return make_error("no Hugging Face cache folder: set HF_HOME (or HF_HUB_CACHE, or HOME)");
    s.cache_dir = home + "/hub";
  }
  s.token = trimmed(value("HF_TOKEN"));
  if (s.token.empty() && !home.empty()) {
    std::ifstream in(home + "/token");
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      s.token = trimmed(text.str());
    }
  }
  return s;
}

Result<HubSettings> hub_settings_from_environment() {
  return hub_settings_from_environment([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace pagoda::hub
