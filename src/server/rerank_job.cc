// RerankJob: from rank-pooled engine outputs to a rerank response.
#include "server/rerank_job.h"

namespace pagoda::server {

RerankJob::RerankJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, RerankParams params,
                     std::function<void()> on_done)
    : PoolingJob(std::move(ctx), std::move(exchange), "rrnk-", std::move(on_done)), params_(std::move(params)) {}

HttpResponse RerankJob::success_body(std::vector<Pooled> results, int64_t /*prompt_tokens*/) {
  std::vector<RerankScore> scores;
  scores.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i)
    scores.push_back({int32_t(i), results[i].vector[0], results[i].num_prompt_tokens});
  HttpResponse resp;
  resp.body = rerank_response(params_, std::move(scores), ctx_.model_name);
  return resp;
}

}  // namespace pagoda::server
