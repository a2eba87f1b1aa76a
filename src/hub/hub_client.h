// HubClient: the Hub's HTTP endpoints a model download needs, as huggingface_hub uses them:
//   GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true  -> the commit ("sha") and every file with its
//       size, git blob id and, for an LFS file, its sha256 ("siblings")
//   GET {endpoint}/{repo}/resolve/{commit}/{file}  -> the bytes, usually through a redirect to a CDN; an LFS file's
//       first answer carries X-Linked-Etag (its sha256) and X-Linked-Size; Range resumes a partial file
// A download goes to blobs/<id>.incomplete, resumes from that file's size (in this run after a cut connection, or in
// a later run), is hashed as it arrives and checked against the listing's size and digest, and only then is renamed to
// blobs/<id> and linked from snapshots/ (hub_cache.h); a wrong digest removes the partial file. A blob already in the
// cache with the listed size is trusted, as huggingface_hub trusts it. Two processes fetching one blob take turns
// (a lock file under ROOT/.locks, as huggingface_hub keeps). Authorization goes to the endpoint's host only.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hub/http_client.h"
#include "hub/hub_cache.h"
#include "hub/hub_settings.h"

namespace pagoda::hub {

struct RepoFile {
  std::string path;
  uint64_t size = 0;
  std::string blob_id;  // git's blob id (40 hex)
  std::string sha256;   // an LFS file's (64 hex), "" otherwise
  // The cache's blob name: the sha256 of an LFS file, else the git blob id.
  const std::string& id() const { return sha256.empty() ? blob_id : sha256; }
};

struct RepoListing {
  std::string commit;
  std::vector<RepoFile> files;
};

// The revision endpoint's JSON. Errors: not JSON, no 40-hex "sha", a sibling without rfilename/size/blobId, a bad
// file name (hub_cache.h's check) or blob id.
Result<RepoListing> parse_repo_listing(std::string_view json, std::string_view repo);

struct DownloadEvents {
  std::function<void(const std::string& file, uint64_t done, uint64_t total)> progress;
  std::function<void(const std::string& note)> note;  // a resumed download, a retry
};

class HubClient {
 public:
  explicit HubClient(HubSettings settings, HttpLimits limits = {}, int max_attempts = 8)
      : settings_(std::move(settings)), limits_(limits), max_attempts_(max_attempts) {}
  const HubSettings& settings() const { return settings_; }

  // Errors: unreachable (StatusCode::kUnavailable), 401/403 (gated or private: set HF_TOKEN), 404 (kNotFound).
  Result<RepoListing> list(std::string_view repo, std::string_view revision) const;
  // The file into the cache and linked from snapshots/<commit>/; returns the bytes transferred (0 when the blob was
  // already there, e.g. from another tool or another revision).
  Result<uint64_t> download(const HubCache& cache, std::string_view repo, std::string_view commit, const RepoFile& file,
                            const DownloadEvents& events) const;

 private:
  // GET following up to 10 redirects; a 2xx body goes to `sink` when given. Non-2xx final answers become errors
  // (401/403 gated or private, 404 kNotFound, 416 kInvalidArgument, 429/5xx and transport failures kUnavailable).
  // `linked_etag`, when given, receives the first answer's X-Linked-Etag / ETag without quotes, before `on_header`.
  Result<HttpResponse> get(const Url& url, std::vector<std::pair<std::string, std::string>> headers,
                           const BodySink& sink, const HeaderCheck& on_header, std::string* linked_etag,
                           std::string_view repo) const;

  HubSettings settings_;
  HttpLimits limits_;
  int max_attempts_;
};

}  // namespace pagoda::hub
