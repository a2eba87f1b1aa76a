// Public request vocabulary: why a generation ended.
#pragma once

#include <string_view>

namespace pagoda {

enum class FinishReason {
  kStop,    // EOS or a stop string
  kLength,  // max_tokens reached, or the context is full
  kAbort,   // cancelled by the caller (or the engine shut down) before it ended on its own
};

inline std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
  }
  return "?";
}

}  // namespace pagoda
