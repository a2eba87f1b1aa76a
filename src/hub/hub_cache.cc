// The Hugging Face cache layout on disk: paths, refs, snapshot links, listing, removal.
#include "hub/hub_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pagoda::hub {
namespace fs = std::filesystem;

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

Status check_name_part(std::string_view part, std::string_view repo) {
  if (part.empty() || part == "." || part == ".." || part[0] == '-' || part.size() > 96 ||
      !std::all_of(part.begin(), part.end(), is_name_char))
    return make_error(fmt::format("'{}' is not a Hugging Face repository id (ORG/NAME: letters, digits, '-', '_', '.')",
                                  repo));
  return Status();
}

// "models--org--name" -> "org/name"; nullopt for another folder.
std::optional<std::string> repo_of_folder(const std::string& folder) {
  constexpr std::string_view kPrefix = "models--";
  if (!folder.starts_with(kPrefix)) return std::nullopt;
  const std::string rest = folder.substr(kPrefix.size());
  const size_t sep = rest.find("--");
  if (sep == std::string::npos) return std::nullopt;
  return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

std::string read_small_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

Status check_repo_id(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos || repo.find('/', slash + 1) != std::string_view::npos)
    return make_error(fmt::format("'{}' is not a Hugging Face repository id (expected ORG/NAME)", repo));
  PAGODA_RETURN_IF_ERROR(check_name_part(repo.substr(0, slash), repo));
  return check_name_part(repo.substr(slash + 1), repo);
}

Status check_repo_file_path(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path[0] == '/' || path.find('\\') != std::string_view::npos ||
      path.find('\0') != std::string_view::npos)
    return make_error(fmt::format("refusing the repository file name '{}'", path));
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return make_error(fmt::format("refusing the repository file name '{}'", path));
    start = end + 1;
  }
  return Status();
}

bool is_blob_id(std::string_view id) {
  return (id.size() == 40 || id.size() == 64) &&
         std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); });
}

std::string HubCache::repo_dir(std::string_view repo) const {
  std::string folder = "models--" + std::string(repo);
  const size_t slash = folder.find('/');
  if (slash != std::string::npos) folder.replace(slash, 1, "--");
  return (fs::path(root_) / folder).string();
}

std::string HubCache::blob_path(std::string_view repo, std::string_view blob_id) const {
  return (fs::path(repo_dir(repo)) / "blobs" / std::string(blob_id)).string();
}

std::string HubCache::snapshot_dir(std::string_view repo, std::string_view commit) const {
  return (fs::path(repo_dir(repo)) / "snapshots" / std::string(commit)).string();
}

Result<std::optional<std::string>> HubCache::read_ref(std::string_view repo, std::string_view revision) const {
  const fs::path path = fs::path(repo_dir(repo)) / "refs" / std::string(revision);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::optional<std::string>();
  const std::string commit = read_small_file(path);
  if (commit.size() != 40 || !is_blob_id(commit))
    return make_error(fmt::format("{} does not hold a commit id", path.string()));
  return std::optional<std::string>(commit);
}

Status HubCache::write_ref(std::string_view repo, std::string_view revision, std::string_view commit) const {
  const fs::path dir = fs::path(repo_dir(repo)) / "refs";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const fs::path path = dir / std::string(revision);
  const fs::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit;
    if (!out) return make_error(fmt::format("cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path, ec);
  if (ec) return make_error(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return Status();
}

Status HubCache::link_snapshot_file(std::string_view repo, std::string_view commit, std::string_view file,
                                    std::string_view blob_id) const {
  PAGODA_RETURN_IF_ERROR(check_repo_file_path(file));
  const fs::path link = fs::path(snapshot_dir(repo, commit)) / std::string(file);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", link.parent_path().string(), ec.message()));
  // From snapshots/<commit>/<a/b/file>: up one level per folder of the file, then two more to the repo folder.
  fs::path target;
  const size_t depth = static_cast<size_t>(std::count(file.begin(), file.end(), '/'));
  for (size_t i = 0; i < depth + 2; ++i) target /= "..";
  target = target / "blobs" / std::string(blob_id);
  const fs::path tmp = link.string() + fmt::format(".link{}", ::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (ec) return make_error(fmt::format("cannot create the link {}: {}", link.string(), ec.message()));
  fs::rename(tmp, link, ec);
  if (ec) return make_error(fmt::format("cannot create the link {}: {}", link.string(), ec.message()));
  return Status();
}

Result<std::vector<std::string>> HubCache::snapshot_files(std::string_view repo, std::string_view commit) const {
  const fs::path dir = snapshot_dir(repo, commit);
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code file_ec;
    if (fs::is_regular_file(it->path(), file_ec))  // follows the link: a dangling one is left out
      files.push_back(it->path().lexically_relative(dir).generic_string());
  }
  if (ec) return make_error(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::vector<CachedRepo>> HubCache::list() const {
  std::vector<CachedRepo> repos;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return repos;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    const std::optional<std::string> repo = repo_of_folder(entry.path().filename().string());
    if (!repo || !entry.is_directory()) continue;
    CachedRepo r;
    r.repo = *repo;
    std::error_code walk;
    for (const fs::directory_entry& blob : fs::directory_iterator(entry.path() / "blobs", walk)) {
      std::error_code size_ec;
      const uintmax_t size = blob.file_size(size_ec);
      if (size_ec) continue;
      (blob.path().extension() == ".incomplete" ? r.incomplete_bytes : r.bytes) += size;
    }
    for (const fs::directory_entry& ref : fs::directory_iterator(entry.path() / "refs", walk))
      if (ref.is_regular_file()) r.refs[ref.path().filename().string()] = read_small_file(ref.path());
    std::string commit;
    if (auto main = r.refs.find("main"); main != r.refs.end()) {
      commit = main->second;
    } else {
      fs::file_time_type newest{};
      for (const fs::directory_entry& snap : fs::directory_iterator(entry.path() / "snapshots", walk)) {
        if (snap.is_directory() && (commit.empty() || snap.last_write_time() > newest)) {
          commit = snap.path().filename().string();
          newest = snap.last_write_time();
        }
      }
    }
    if (!commit.empty() && is_blob_id(commit)) {
      Result<std::vector<std::string>> files = snapshot_files(r.repo, commit);
      if (files.ok()) r.files = *files;
    }
    repos.push_back(std::move(r));
  }
  if (ec) return make_error(fmt::format("cannot list {}: {}", root_, ec.message()));
  std::sort(repos.begin(), repos.end(), [](const CachedRepo& a, const CachedRepo& b) { return a.repo < b.repo; });
  return repos;
}

Status HubCache::remove(std::string_view repo) const {
  PAGODA_RETURN_IF_ERROR(check_repo_id(repo));
  const fs::path dir = repo_dir(repo);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(fmt::format("{} is not in the cache ({})", repo, root_));
  fs::remove_all(dir, ec);
  if (ec) return make_error(fmt::format("cannot remove {}: {}", dir.string(), ec.message()));
  return Status();
}

}  // namespace pagoda::hub
