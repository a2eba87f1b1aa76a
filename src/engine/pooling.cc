// Pooling names.
#include "engine/pooling.h"

namespace pagoda {

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kNone: return "none";
    case Pooling::kLast: return "last";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kRank: return "rank";
  }
  return "none";
}

std::optional<Pooling> parse_pooling(std::string_view name) {
  for (Pooling p : {Pooling::kNone, Pooling::kLast, Pooling::kMean, Pooling::kCls, Pooling::kRank})
    if (name == pooling_name(p)) return p;
  return std::nullopt;
}

std::optional<Pooling> pooling_from_gguf_type(uint32_t type) {
  switch (type) {
    case 0: return Pooling::kNone;
    case 1: return Pooling::kMean;
    case 2: return Pooling::kCls;
    case 3: return Pooling::kLast;
    case 4: return Pooling::kRank;
    default: return std::nullopt;
  }
}

}  // namespace pagoda
