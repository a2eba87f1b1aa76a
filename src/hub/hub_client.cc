// The Hub's listing and resolve endpoints, and the resumable, verified download of one file into the cache.
#include "hub/hub_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hub/content_hash.h"
#include "hub/url.h"

namespace pagoda::hub {
namespace fs = std::filesystem;

namespace {

constexpr int kMaxRedirects = 10;
constexpr uint64_t kProgressStep = 1 << 20;  // a progress event per MiB

std::string error_detail(const HttpResponse& r) {
  std::string message = r.header("X-Error-Message");
  if (message.empty()) {
    nlohmann::json body = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_object() && body.contains("error") && body["error"].is_string()) message = body["error"];
  }
  return message.empty() ? "" : " (" + message + ")";
}

// Holds an exclusive flock on a lock file for one blob while it downloads.
class BlobLock {
 public:
  explicit BlobLock(int fd) : fd_(fd) {}
  ~BlobLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_;
};

Result<std::unique_ptr<BlobLock>> lock_blob(const HubCache& cache, std::string_view repo, std::string_view id) {
  const fs::path dir = fs::path(cache.root()) / ".locks" / fs::path(cache.repo_dir(repo)).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const std::string path = (dir / (std::string(id) + ".lock")).string();
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(fmt::format("cannot open {}", path));
  auto lock = std::make_unique<BlobLock>(fd);
  if (::flock(fd, LOCK_EX) != 0) return make_error(fmt::format("cannot lock {}", path));
  return lock;
}

// X-Linked-Etag (an LFS file's sha256), else ETag, without W/ and quotes.
std::string unquoted_etag(const HttpResponse& r) {
  std::string etag = r.header("X-Linked-Etag");
  if (etag.empty()) etag = r.header("ETag");
  if (etag.starts_with("W/")) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

uint64_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

}  // namespace

Result<RepoListing> parse_repo_listing(std::string_view json, std::string_view repo) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const std::string what = fmt::format("the Hub's listing of {}", repo);
  if (!doc.is_object()) return make_error(what + " is not a JSON object");
  RepoListing listing;
  if (!doc.contains("sha") || !doc["sha"].is_string()) return make_error(what + " has no commit (\"sha\")");
  listing.commit = doc["sha"];
  if (listing.commit.size() != 40 || !is_blob_id(listing.commit))
    return make_error(fmt::format("{}: \"sha\" '{}' is not a commit id", what, listing.commit));
  if (!doc.contains("siblings") || !doc["siblings"].is_array()) return make_error(what + " has no \"siblings\"");
  for (const nlohmann::json& s : doc["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
      return make_error(what + ": a sibling has no \"rfilename\"");
    RepoFile f;
    f.path = s["rfilename"];
    PAGODA_RETURN_IF_ERROR(check_repo_file_path(f.path));
    if (!s.contains("size") || !s["size"].is_number_unsigned() || !s.contains("blobId") || !s["blobId"].is_string())
      return make_error(fmt::format("{}: '{}' has no size or blobId (the listing needs ?blobs=true)", what, f.path));
    f.size = s["size"];
    f.blob_id = s["blobId"];
    if (s.contains("lfs") && s["lfs"].is_object()) {
      const nlohmann::json& lfs = s["lfs"];
      if (!lfs.contains("sha256") || !lfs["sha256"].is_string())
        return make_error(fmt::format("{}: '{}' is an LFS file without a sha256", what, f.path));
      f.sha256 = lfs["sha256"];
      if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"];
    }
    if (f.blob_id.size() != 40 || !is_blob_id(f.blob_id) || (!f.sha256.empty() && (f.sha256.size() != 64 || !is_blob_id(f.sha256))))
      return make_error(fmt::format("{}: '{}' has a malformed blob id or sha256", what, f.path));
    listing.files.push_back(std::move(f));
  }
  return listing;
}

Result<HttpResponse> HubClient::get(const Url& first, std::vector<std::pair<std::string, std::string>> headers,
                                    const BodySink& sink, const HeaderCheck& on_header, std::string* linked_etag,
                                    std::string_view repo) const {
  PAGODA_ASSIGN_OR_RETURN(Url endpoint, parse_url(settings_.endpoint));
  Url url = first;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    HttpRequest request;
    request.url = url;
    request.headers = headers;
    if (!settings_.token.empty() && url.origin() == endpoint.origin())
      request.headers.emplace_back("Authorization", "Bearer " + settings_.token);
    request.sink = sink;
    request.on_header = on_header;
    PAGODA_ASSIGN_OR_RETURN(HttpResponse response, http_request(request, limits_));
    if (hop == 0 && linked_etag != nullptr) *linked_etag = unquoted_etag(response);
    if (response.status >= 200 && response.status < 300) return response;
    if (response.status >= 300 && response.status < 400 && !response.header("Location").empty()) {
      PAGODA_ASSIGN_OR_RETURN(url, resolve_location(url, response.header("Location")));
      continue;
    }
    const std::string where = fmt::format("GET {}: HTTP {}{}", url.str(), response.status, error_detail(response));
    if (response.status == 401 || response.status == 403)
      return make_error(fmt::format("{}: {} is gated or private: set HF_TOKEN to a token that may read it", where, repo));
    if (response.status == 404) return make_error(where, StatusCode::kNotFound);
    if (response.status == 416) return make_error(where, StatusCode::kInvalidArgument);
    if (response.status >= 500 || response.status == 429) return make_error(where, StatusCode::kUnavailable);
    return make_error(where);
  }
  return make_error(fmt::format("GET {}: more than {} redirects", url.str(), kMaxRedirects));
}

Result<RepoListing> HubClient::list(std::string_view repo, std::string_view revision) const {
  PAGODA_RETURN_IF_ERROR(check_repo_id(repo));
  const std::string url =
      fmt::format("{}/api/models/{}/revision/{}?blobs=true", settings_.endpoint, repo, encode_path(revision));
  PAGODA_ASSIGN_OR_RETURN(Url parsed, parse_url(url));
  Result<HttpResponse> response = get(parsed, {}, nullptr, nullptr, nullptr, repo);
  if (!response.ok() && response.status().code() == StatusCode::kNotFound)
    return make_error(fmt::format("{}: no repository {} (revision {}) at {}", response.error(), repo, revision,
                                  settings_.endpoint),
                      StatusCode::kNotFound);
  if (!response.ok()) return response.status();
  return parse_repo_listing(response->body, repo);
}

Result<uint64_t> HubClient::download(const HubCache& cache, std::string_view repo, std::string_view commit,
                                     const RepoFile& file, const DownloadEvents& events) const {
  const std::string id = file.id();
  const fs::path blob = cache.blob_path(repo, id);
  auto link = [&]() { return cache.link_snapshot_file(repo, commit, file.path, id); };
  std::error_code ec;
  if (fs::is_regular_file(blob, ec) && size_or_zero(blob) == file.size) {
    PAGODA_RETURN_IF_ERROR(link());
    return uint64_t{0};
  }
  fs::create_directories(blob.parent_path(), ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", blob.parent_path().string(), ec.message()));
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<BlobLock> lock, lock_blob(cache, repo, id));
  if (fs::is_regular_file(blob, ec) && size_or_zero(blob) == file.size) {  // another process finished it
    PAGODA_RETURN_IF_ERROR(link());
    return uint64_t{0};
  }

  PAGODA_ASSIGN_OR_RETURN(Url url, parse_url(fmt::format("{}/{}/resolve/{}/{}", settings_.endpoint, repo, commit,
                                                           encode_path(file.path))));
  const fs::path incomplete = blob.string() + ".incomplete";
  uint64_t transferred = 0;
  // The digest is taken as the bytes arrive; `hashed` counts what it has seen, so that a resumed download reads back
  // only a partial file it has not hashed (one from an earlier run).
  ContentHash hash = ContentHash::for_id(id, file.size);
  uint64_t hashed = 0;
  for (int attempt = 1;; ++attempt) {
    uint64_t offset = size_or_zero(incomplete);
    if (offset > file.size) {
      fs::remove(incomplete, ec);
      offset = 0;
    }
    if (hashed != offset) {
      hash = ContentHash::for_id(id, file.size);
      hashed = 0;
      if (offset > 0) PAGODA_RETURN_IF_ERROR(hash_file_prefix(incomplete.string(), offset, hash));
      hashed = offset;
    }
    if (offset == file.size && fs::exists(incomplete, ec)) break;
    if (offset > 0 && attempt == 1)
      if (events.note)
        events.note(fmt::format("{}: resuming at {} of {} bytes", file.path, offset, file.size));
    std::FILE* out = std::fopen(incomplete.c_str(), offset > 0 ? "ab" : "wb");
    if (out == nullptr) return make_error(fmt::format("cannot write {}", incomplete.string()));
    uint64_t written = offset;
    uint64_t last_event = 0;
    std::string linked;
    std::vector<std::pair<std::string, std::string>> headers = {{"Accept-Encoding", "identity"}};
    if (offset > 0) headers.emplace_back("Range", fmt::format("bytes={}-", offset));
    HeaderCheck on_header = [&](const HttpResponse& r) -> Status {
      if (offset > 0 && r.status == 200) {  // the server sent the whole file: start over
        if (std::freopen(incomplete.c_str(), "wb", out) == nullptr)
          return make_error(fmt::format("cannot write {}", incomplete.string()));
        written = 0;
        hash = ContentHash::for_id(id, file.size);
        hashed = 0;
      } else if (offset > 0 && r.status == 206) {
        const std::string range = r.header("Content-Range");
        if (!range.starts_with(fmt::format("bytes {}-", offset)))
          return make_error(fmt::format("{}: asked for bytes from {}, got Content-Range '{}'", url.str(), offset, range));
      }
      // An LFS file's first answer names its sha256; one that disagrees with the listing is not the file listed.
      if (is_blob_id(linked) && linked.size() == 64 && linked != id)
        return make_error(fmt::format("{}: the Hub names sha256 {}, its listing {}", file.path, linked, id));
      return Status();
    };
    BodySink sink = [&](std::span<const char> bytes) -> Status {
      if (written + bytes.size() > file.size)
        return make_error(fmt::format("{}: the server sent more than the {} bytes listed", file.path, file.size));
      if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
        return make_error(fmt::format("cannot write {}", incomplete.string()));
      hash.update(bytes);
      hashed += bytes.size();
      written += bytes.size();
      transferred += bytes.size();
      if (events.progress && (written - last_event >= kProgressStep || written == file.size)) {
        last_event = written;
        events.progress(file.path, written, file.size);
      }
      return Status();
    };
    Result<HttpResponse> response =
        file.size == 0 ? Result<HttpResponse>(HttpResponse{}) : get(url, headers, sink, on_header, &linked, repo);
    const bool closed = std::fclose(out) == 0;
    if (response.ok() && !closed) return make_error(fmt::format("cannot write {}", incomplete.string()));
    if (response.ok()) {
      if (written == file.size) break;
      response = make_error(fmt::format("{}: the connection ended after {} of {} bytes", file.path, written, file.size),
                            StatusCode::kUnavailable);
    }
    if (response.status().code() == StatusCode::kInvalidArgument) {  // 416: the partial file is not a prefix
      fs::remove(incomplete, ec);
    } else if (response.status().code() != StatusCode::kUnavailable) {
      if (size_or_zero(incomplete) == 0) fs::remove(incomplete, ec);
      return response.status();
    }
    if (attempt >= max_attempts_)
      return make_error(fmt::format("{} (gave up after {} attempts; the {} bytes received are kept in {} for the next "
                                    "run)",
                                    response.error(), attempt, size_or_zero(incomplete), incomplete.string()));
    if (events.note)
      events.note(fmt::format("{}; resuming at byte {} (attempt {} of {})", response.error(), size_or_zero(incomplete),
                              attempt + 1, max_attempts_));
  }

  if (hashed != file.size) return make_error(fmt::format("{}: hashed {} of {} bytes", file.path, hashed, file.size));
  const std::string digest = hash.hex();
  if (digest != id) {
    fs::remove(incomplete, ec);
    return make_error(fmt::format("{}: checksum mismatch: the listing says {} {}, the {} bytes received hash to {}; "
                                  "the download was removed",
                                  file.path, id.size() == 64 ? "sha256" : "git blob id", id, file.size, digest));
  }
  fs::rename(incomplete, blob, ec);
  if (ec) return make_error(fmt::format("cannot move {} into place: {}", incomplete.string(), ec.message()));
  PAGODA_RETURN_IF_ERROR(link());
  return transferred;
}

}  // namespace pagoda::hub
