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

// The digest `expected` names (ContentHash::for_id) of the file at `path`, read through. Errors: unreadable.
Result<std::string> hash_file(const std::string& path, std::string_view expected, uint64_t size);

}  // namespace pagoda::hub
