// fetch_model: `-hf ORG/NAME[:QUANT]` (and `--hf-file`) to a local path the loader opens: the first GGUF of the
// chosen files, or the snapshot folder of a safetensors repository. Online: the Hub's listing of the revision, the
// files chosen from it (model_files.h), each downloaded or found in the cache (hub_client.h), refs/<revision>
// written. Offline (HF_HUB_OFFLINE), or when the endpoint cannot be reached and the cache has the revision: the
// files chosen from the cached snapshot, with no network at all. The one entry point the CLI calls.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_client.h"
#include "hub/hub_settings.h"

namespace pagoda::hub {

struct ModelRequest {
  std::string spec;      // ORG/NAME[:QUANT]
  std::string file;      // --hf-file: an exact file (its split siblings too); "" = pick by QUANT
  std::string revision = "main";
};

struct FetchedModel {
  std::string path;    // what to load: snapshots/<commit>/<file.gguf> or snapshots/<commit>
  std::string repo;
  std::string commit;
  std::vector<std::string> files;
  uint64_t bytes_downloaded = 0;
  bool offline = false;  // resolved from the cache alone
  std::string note;      // why the cache was used without asking the Hub, when it was
};

Result<FetchedModel> fetch_model(const ModelRequest& request, const HubSettings& settings, const DownloadEvents& events,
                                 const HttpLimits& limits = {});

}  // namespace pagoda::hub
