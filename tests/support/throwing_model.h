// ThrowingModel: a test double whose forward pass throws std::bad_alloc once, on call `throw_at` (as an allocation
// failure would), and otherwise runs the model it wraps: for the paths that must survive a failed pass.
#pragma once

#include <new>

#include "support/wrapped_model.h"

namespace pagoda {

class ThrowingModel final : public WrappedModel {
 public:
  ThrowingModel(const Model& inner, int throw_at) : WrappedModel(inner), throw_at_(throw_at) {}
  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                     ThreadPool& pool) const override {
    if (++num_calls_ == throw_at_) throw std::bad_alloc();
    return inner_.forward(batch, kv, workspace, pool);
  }

 private:
  const int throw_at_;
  mutable int num_calls_ = 0;
};

}  // namespace pagoda
