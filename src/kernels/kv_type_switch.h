// with_kv_type: calls f.template operator()<T>() for the runtime KvDType t, so that a kernel picks its row loads once
// per tile, not once per value. Instantiated only with the ISA folders' lambdas (internal types: no shared copy).
#pragma once

#include "core/types.h"

namespace pagoda::kernels::detail {

template <class F>
inline void with_kv_type(KvDType t, F&& f) {
  switch (t) {
    case KvDType::kF32: f.template operator()<KvDType::kF32>(); return;
    case KvDType::kInt8: f.template operator()<KvDType::kInt8>(); return;
    case KvDType::kF16: f.template operator()<KvDType::kF16>(); return;
    case KvDType::kBF16: f.template operator()<KvDType::kBF16>(); return;
    case KvDType::kQ8_0: f.template operator()<KvDType::kQ8_0>(); return;
    case KvDType::kQ4_0: f.template operator()<KvDType::kQ4_0>(); return;
  }
}

}  // namespace pagoda::kernels::detail
