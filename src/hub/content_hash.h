// ContentHash: the digests a Hub file is checked against, over OpenSSL's EVP: the sha256 of an LFS file (its
// X-Linked-Etag / lfs.sha256) and the git blob id of a small file (sha1 of "blob <size>\0" + bytes). Hashing only.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace pagoda::hub {

class ContentHash {
 public:
  static ContentHash sha256();
  // A git blob id of a `size`-byte file.
  static ContentHash git_blob(uint64_t size);
  // The digest that `id` is: 64 hex digits = sha256, 40 = git blob of `size` bytes.
  static ContentHash for_id(std::string_view id, uint64_t size);
  ~ContentHash();
  ContentHash(ContentHash&&) noexcept;
  ContentHash& operator=(ContentHash&&) noexcept;

  void update(std::span<const char> bytes);
  std::string hex();  // lower-case; ends the hash

 private:
  struct State;
  explicit ContentHash(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Feeds the first `bytes` bytes of the file at `path` to `hash` (a download resumed from a partial file). Errors:
// unreadable, shorter than `bytes`.
Status hash_file_prefix(const std::string& path, uint64_t bytes, ContentHash& hash);

}  // namespace pagoda::hub
