// RerankJob: one /v1/rerank (or /rerank, /v1/reranking, /reranking) request inside the server: a rank-pooling job
// (server/pooling_job.h: one request in the engine per query/document pair, framed by server/rerank_protocol.h), each
// coming back as the classification head's outputs, of which the first is the document's score; then the one
// response body in the request's shape (rerank_protocol's rerank_response).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "server/pooling_job.h"
#include "server/rerank_protocol.h"

namespace pagoda::server {

class RerankJob final : public PoolingJob {
 public:
  RerankJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, RerankParams params,
            std::function<void()> on_done);

 private:
  HttpResponse success_body(std::vector<Pooled> results, int64_t prompt_tokens) override;

  RerankParams params_;
};

}  // namespace pagoda::server
