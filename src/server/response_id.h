// IdGenerator: the one generator of the ids a server's responses and items carry (chatcmpl-..., msg_..., resp_...),
// unique among one generator's ids and unlikely to repeat across restarts. The server's owner makes one and every
// model's ApiServer borrows it, so ids stay unique across the models one server serves. Knows nothing of the
// protocols' prefixes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::server {

class IdGenerator {
 public:
  IdGenerator();  // a random salt
  explicit IdGenerator(uint64_t salt) : salt_(salt) {}
  IdGenerator(const IdGenerator&) = delete;
  IdGenerator& operator=(const IdGenerator&) = delete;

  // `prefix` then 24 hex digits: the salt mixed with a counter, then the counter. Thread-safe.
  std::string next(std::string_view prefix);

 private:
  const uint64_t salt_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace pagoda::server
