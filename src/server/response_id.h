// unique_id: the one generator of the ids the server's responses and items carry (chatcmpl-..., msg_..., resp_...),
// unique within the process and unlikely to repeat across restarts. Knows nothing of the protocols' prefixes.
#pragma once

#include <string>
#include <string_view>

namespace pagoda::server {

// `prefix` then 24 hex digits: a per-process random salt mixed with a counter, then the counter.
std::string unique_id(std::string_view prefix);

}  // namespace pagoda::server
