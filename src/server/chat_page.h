// The chat page served at GET /: one self-contained HTML document (inline CSS and JavaScript, no external
// assets) that talks to /v1/chat/completions with streaming and shows each reply's TTFT, TPOT and tokens/s.
#pragma once

#include <string>
#include <string_view>

namespace pagoda::server {

std::string chat_page_html(std::string_view model_name);

}  // namespace pagoda::server
