// Resolving a model name to local files through the Hub or the cache alone.
#include "hub/model_fetch.h"

#include <fmt/format.h>

#include <filesystem>

#include "hub/hub_cache.h"
#include "hub/model_files.h"

namespace pagoda::hub {
namespace {

FetchedModel located(const HubCache& cache, const std::string& repo, const std::string& commit,
                     const ModelFiles& files) {
  FetchedModel m;
  m.repo = repo;
  m.commit = commit;
  m.files = files.files;
  const std::filesystem::path dir = cache.snapshot_dir(repo, commit);
  m.path = files.model_file.empty() ? dir.string() : (dir / files.model_file).string();
  return m;
}

Result<FetchedModel> from_cache(const HubCache& cache, const RepoSpec& spec, const ModelRequest& request,
                                const std::string& why) {
  Result<std::optional<std::string>> commit = cache.read_ref(spec.repo, request.revision);
  if (!commit.ok()) return commit.status();
  if (!commit->has_value())
    return make_error(fmt::format("{}, and {} (revision {}) is not in the cache {}", why, spec.repo, request.revision,
                                  cache.root()),
                      StatusCode::kNotFound);
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> paths, cache.snapshot_files(spec.repo, **commit));
  Result<ModelFiles> files = choose_model_files(paths, spec.repo, spec.quant, request.file);
  if (!files.ok())
    return make_error(fmt::format("{}, and the cached snapshot {} of {}: {}", why, **commit, spec.repo, files.error()),
                      files.status().code());
  FetchedModel m = located(cache, spec.repo, **commit, *files);
  m.offline = true;
  m.note = why;
  return m;
}

}  // namespace

Result<FetchedModel> fetch_model(const ModelRequest& request, const HubSettings& settings, const DownloadEvents& events,
                                 const HttpLimits& limits) {
  PAGODA_ASSIGN_OR_RETURN(RepoSpec spec, parse_repo_spec(request.spec));
  if (!request.file.empty()) {
    PAGODA_RETURN_IF_ERROR(check_repo_file_path(request.file));
    if (!spec.quant.empty()) return make_error("--hf-file names the file; drop the :QUANT from -hf");
  }
  const HubCache cache(settings.cache_dir);
  if (settings.offline) return from_cache(cache, spec, request, "HF_HUB_OFFLINE is set");

  const HubClient client(settings, limits);
  Result<RepoListing> listing = client.list(spec.repo, request.revision);
  if (!listing.ok()) {
    // Unreachable (no network, the mirror down): a cached revision still serves, as huggingface_hub does.
    if (listing.status().code() != StatusCode::kUnavailable) return listing.status();
    Result<FetchedModel> cached =
        from_cache(cache, spec, request, fmt::format("{} cannot be reached ({})", settings.endpoint, listing.error()));
    if (cached.ok() || cached.status().code() != StatusCode::kNotFound) return cached;
    return listing.status();
  }
  std::vector<std::string> paths;
  for (const RepoFile& f : listing->files) paths.push_back(f.path);
  PAGODA_ASSIGN_OR_RETURN(ModelFiles files, choose_model_files(paths, spec.repo, spec.quant, request.file));
  FetchedModel m = located(cache, spec.repo, listing->commit, files);
  for (const std::string& name : files.files) {
    for (const RepoFile& f : listing->files) {
      if (f.path != name) continue;
      PAGODA_ASSIGN_OR_RETURN(uint64_t bytes, client.download(cache, spec.repo, listing->commit, f, events));
      m.bytes_downloaded += bytes;
    }
  }
  PAGODA_RETURN_IF_ERROR(cache.write_ref(spec.repo, request.revision, listing->commit));
  return m;
}

}  // namespace pagoda::hub
