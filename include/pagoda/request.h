// Public request vocabulary: why a generation ended. (The full GenerateRequest / TokenEvent types arrive with
// the engine.)
#pragma once

#include <string_view>

namespace pagoda {

enum class FinishReason {
  kStop,    // EOS or a stop string
  kLength,  // max_tokens reached, or the context is full
};

inline std::string_view finish_reason_name(FinishReason r) { return r == FinishReason::kStop ? "stop" : "length"; }

}  // namespace pagoda
