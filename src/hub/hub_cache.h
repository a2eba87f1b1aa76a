// HubCache: the Hugging Face cache layout (as huggingface_hub's file download lays it out), so that models other tools
// downloaded are found and ours are found by them:
//   ROOT/models--ORG--NAME/blobs/<sha256 of an LFS file | git blob id of a small one>   (a finished file)
//   ROOT/models--ORG--NAME/blobs/<id>.incomplete                                        (a download under way)
//   ROOT/models--ORG--NAME/snapshots/<commit>/<path in the repo> -> ../../blobs/<id>    (relative symlinks)
//   ROOT/models--ORG--NAME/refs/<revision>                                              (holds the commit)
// Owns paths, refs, links, listing and removal; every path it builds from a repository id or a file name the server
// sent is checked first (no "..", no absolute path). Never talks to the network.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::hub {

// "org/name" (Hub repository names: letters, digits, '-', '_', '.'; neither part "." or ".." or starting with '-').
Status check_repo_id(std::string_view repo);
// A file path inside a repository: relative, '/'-separated, no empty, "." or ".." part.
Status check_repo_file_path(std::string_view path);
// A blob id: 40 (git) or 64 (sha256) lower-case hex digits.
bool is_blob_id(std::string_view id);

struct CachedRepo {
  std::string repo;                           // "org/name"
  uint64_t bytes = 0;                         // finished blobs
  uint64_t incomplete_bytes = 0;              // .incomplete blobs (downloads that did not finish)
  std::map<std::string, std::string> refs;    // revision -> commit
  std::vector<std::string> files;             // the files of refs/main's snapshot (else the newest one)
};

class HubCache {
 public:
  explicit HubCache(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  std::string repo_dir(std::string_view repo) const;  // ROOT/models--ORG--NAME
  std::string blob_path(std::string_view repo, std::string_view blob_id) const;
  std::string snapshot_dir(std::string_view repo, std::string_view commit) const;

  // The commit refs/<revision> holds; nullopt when the file is absent. Errors: unreadable, not a commit id.
  Result<std::optional<std::string>> read_ref(std::string_view repo, std::string_view revision) const;
  Status write_ref(std::string_view repo, std::string_view revision, std::string_view commit) const;
  // snapshots/<commit>/<file> -> the blob, as a relative symlink (replaced atomically when it exists).
  Status link_snapshot_file(std::string_view repo, std::string_view commit, std::string_view file,
                            std::string_view blob_id) const;
  // The files of a snapshot (paths in the repository, sorted), those whose link resolves to a file.
  Result<std::vector<std::string>> snapshot_files(std::string_view repo, std::string_view commit) const;

  // Every models--*--* folder, sorted by repository id.
  Result<std::vector<CachedRepo>> list() const;
  // Removes the repository's whole folder. Errors: not in the cache, I/O.
  Status remove(std::string_view repo) const;

 private:
  std::string root_;
};

}  // namespace pagoda::hub
