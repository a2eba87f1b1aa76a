// sha256 and git blob ids with OpenSSL's EVP digests.
#include "hub/content_hash.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/check.h"

namespace pagoda::hub {

struct ContentHash::State {
  EVP_MD_CTX* ctx = nullptr;
  ~State() { EVP_MD_CTX_free(ctx); }
};

ContentHash::ContentHash(std::unique_ptr<State> state) : state_(std::move(state)) {}
ContentHash::~ContentHash() = default;
ContentHash::ContentHash(ContentHash&&) noexcept = default;
ContentHash& ContentHash::operator=(ContentHash&&) noexcept = default;

ContentHash ContentHash::sha256() {
  auto state = std::make_unique<State>();
  state->ctx = EVP_MD_CTX_new();
  PAGODA_CHECK(state->ctx != nullptr && EVP_DigestInit_ex(state->ctx, EVP_sha256(), nullptr) == 1);
  return ContentHash(std::move(state));
}

ContentHash ContentHash::git_blob(uint64_t size) {
  auto state = std::make_unique<State>();
  state->ctx = EVP_MD_CTX_new();
  PAGODA_CHECK(state->ctx != nullptr && EVP_DigestInit_ex(state->ctx, EVP_sha1(), nullptr) == 1);
  ContentHash hash(std::move(state));
  const std::string header = fmt::format("blob {}", size);
  hash.update(std::span<const char>(header.data(), header.size() + 1));  // with its '\0'
  return hash;
}

ContentHash ContentHash::for_id(std::string_view id, uint64_t size) {
  return id.size() == 64 ? sha256() : git_blob(size);
}

void ContentHash::update(std::span<const char> bytes) {
  PAGODA_CHECK(EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) == 1);
}

std::string ContentHash::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PAGODA_CHECK(EVP_DigestFinal_ex(state_->ctx, digest, &length) == 1);
  std::string out;
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

Status hash_file_prefix(const std::string& path, uint64_t bytes, ContentHash& hash) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return make_error(fmt::format("cannot read {}", path));
  std::vector<char> buffer(1 << 20);
  uint64_t left = bytes;
  while (left > 0) {
    const size_t n = std::fread(buffer.data(), 1, std::min<uint64_t>(left, buffer.size()), f);
    if (n == 0) break;
    hash.update({buffer.data(), n});
    left -= n;
  }
  std::fclose(f);
  if (left > 0) return make_error(fmt::format("cannot read {} bytes of {}", bytes, path));
  return Status();
}

}  // namespace pagoda::hub
