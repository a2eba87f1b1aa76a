// EmbeddingJob: one /v1/embeddings (or Ollama's /api/embed, /api/embeddings) request inside the server: a pooling
// job (server/pooling_job.h: one request in the engine per input) whose vectors become the one JSON body of the API
// asked (L2 normalized unless asked otherwise, truncated to `dimensions`, float or base64).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "server/embeddings_protocol.h"
#include "server/pooling_job.h"

namespace pagoda::server {

class EmbeddingJob final : public PoolingJob {
 public:
  EmbeddingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, EmbeddingParams params,
               std::function<void()> on_done);

 private:
  HttpResponse success_body(std::vector<Pooled> results, int64_t prompt_tokens) override;
  HttpResponse error_body(const ApiError& e) const override;

  EmbeddingParams params_;
};

}  // namespace pagoda::server
