// WrappedModel: a test double's base: a Model that passes every call to another one, so a double overrides only
// what it changes (a forward pass that throws, logits it bends, a configuration it alters).
#pragma once

#include "model/model.h"

namespace pagoda {

class WrappedModel : public Model {
 public:
  explicit WrappedModel(const Model& inner) : inner_(inner) {}
  LogitsView forward(const BatchView& batch, const KvCacheView& kv, Workspace& workspace,
                     ThreadPool& pool) const override {
    return inner_.forward(batch, kv, workspace, pool);
  }
  const ModelConfig& config() const override { return inner_.config(); }
  const float* forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv,
                              Workspace& workspace, ThreadPool& pool) const override {
    return inner_.forward_hidden(batch, hidden_in, kv, workspace, pool);
  }
  LogitsView forward_logits(const BatchView& batch, Workspace& workspace, ThreadPool& pool) const override {
    return inner_.forward_logits(batch, workspace, pool);
  }

 protected:
  const Model& inner_;
};

}  // namespace pagoda
