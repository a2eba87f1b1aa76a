// Fetching a model by name for a subcommand, with the progress shown on stderr.
#include "cli/hub_model.h"

#include <cstdio>
#include <memory>

#include "cli/progress.h"

namespace pagoda::cli {

Result<hub::FetchedModel> fetch_hf_model(const std::string& spec, const std::string& file) {
  PAGODA_ASSIGN_OR_RETURN(hub::HubSettings settings, hub::hub_settings_from_environment());
  std::unique_ptr<Progress> progress;
  std::string current;
  hub::DownloadEvents events;
  events.progress = [&](const std::string& name, uint64_t done, uint64_t total) {
    if (name != current || !progress) {
      if (progress) progress->finish();
      progress = std::make_unique<Progress>("download", ProgressUnit::kBytes);
      current = name;
    }
    progress->update(static_cast<int64_t>(done), static_cast<int64_t>(total), name);
  };
  events.note = [&](const std::string& note) {
    if (progress) progress->finish();
    progress.reset();
    std::fprintf(stderr, "pagoda: note: %s\n", note.c_str());
  };
  hub::ModelRequest request{spec, file};
  Result<hub::FetchedModel> model = hub::fetch_model(request, settings, events);
  if (progress) progress->finish();
  if (!model.ok()) return model.status();
  if (model->offline) {
    std::fprintf(stderr, "pagoda: note: %s; using the cached %s (commit %s)\n", model->note.c_str(),
                 model->repo.c_str(), model->commit.c_str());
  }
  std::fprintf(stderr, "pagoda: %s: %s (%zu file%s, %.1f MiB downloaded)\n", spec.c_str(), model->path.c_str(),
               model->files.size(), model->files.size() == 1 ? "" : "s", double(model->bytes_downloaded) / (1 << 20));
  return model;
}

}  // namespace pagoda::cli
