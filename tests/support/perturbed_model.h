// PerturbedModel: a test double for a draft model that is wrong some of the time, deterministically: it runs
// another model and, for every logits row whose position is a multiple of `period`, raises the token after the
// argmax above the argmax, so its greedy choice there differs from the wrapped model's. Also a way to give the
// engine a model whose configuration (e.g. vocabulary size) differs, for the checks that refuse it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/model.h"

namespace pagoda {

class PerturbedModel final : public Model {
 public:
  PerturbedModel(const Model& inner, int32_t period) : inner_(inner), period_(period), config_(inner.config()) {}
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
  const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv,
                              Workspace& workspace, ThreadPool& pool) const override {
    return inner_.forward_hidden(batch, hidden_in, kv, workspace, pool);
  }
  LogitsView forward_logits(const BatchView& batch, Workspace& workspace, ThreadPool& pool) const override {
    return inner_.forward_logits(batch, workspace, pool);
  }

 private:
  const Model& inner_;
  int32_t period_;
  ModelConfig config_;
};

}  // namespace pagoda
