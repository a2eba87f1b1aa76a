// HubSettings: where models come from and where they are kept, as the Hugging Face tools read it from the
// environment: HF_ENDPOINT (a mirror; default https://huggingface.co), HF_TOKEN (else the token file
// $HF_HOME/token), HF_HUB_OFFLINE, and the cache folder (HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub). A plain value the caller passes on; read once.
#pragma once

#include <pagoda/status.h>

#include <functional>
#include <optional>
#include <string>

namespace pagoda::hub {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                 // "" = anonymous
  bool offline = false;
  std::string cache_dir;  // the hub cache: holds models--ORG--NAME folders
};

// `getenv` is the environment's lookup (std::getenv in the CLI, a map in tests). Errors: no cache folder can be
// named (no HF_HOME, XDG_CACHE_HOME or HOME).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
Result<HubSettings> hub_settings_from_environment(const EnvLookup& getenv);
// The process environment.
Result<HubSettings> hub_settings_from_environment();

}  // namespace pagoda::hub
