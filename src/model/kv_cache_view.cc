// KV dtype names.
#include "model/kv_cache_view.h"

namespace pagoda {

std::optional<KvDType> parse_kv_dtype(std::string_view name) {
  if (name == "none" || name == "f32") return KvDType::kF32;
  if (name == "int8") return KvDType::kInt8;
  return std::nullopt;
}

const char* kv_dtype_name(KvDType dtype) { return dtype == KvDType::kInt8 ? "int8" : "f32"; }

}  // namespace pagoda
