// PerturbedModel: a test double for a draft model that is wrong some of the time, deterministically: it runs
// another model and, for every logits row whose position is a multiple of `period`, raises the token after the
// argmax above the argmax, so its greedy choice there differs from the wrapped model's. Its configuration can be
// altered (e.g. the vocabulary size), for the checks that refuse a mismatched draft.
#pragma once

#include <algorithm>
#include <cstdint>

#include "support/wrapped_model.h"

namespace pagoda {

class PerturbedModel final : public WrappedModel {
 public:
  PerturbedModel(const Model& inner, int32_t period) : WrappedModel(inner), period_(period), config_(inner.config()) {}
  ModelConfig& mutable_config() { return config_; }

  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                     ThreadPool& pool) const override {
    LogitsView out = inner_.forward(batch, kv, workspace, pool);
    for (int32_t r = 0; r < out.num_rows; ++r) {
      if (batch.positions[size_t(batch.logits_rows[size_t(r)])] % period_ != 0) continue;
      const std::span<float> row = out.row(r);
      const auto top = std::max_element(row.begin(), row.end());
      row[size_t((top - row.begin() + 1) % int64_t(row.size()))] = *top + 1.0f;
    }
    return out;
  }
  const ModelConfig& config() const override { return config_; }

 private:
  int32_t period_;
  ModelConfig config_;
};

}  // namespace pagoda
