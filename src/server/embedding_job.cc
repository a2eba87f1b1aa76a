// EmbeddingJob: from pooled engine outputs to an OpenAI, Ollama or llama-server embeddings response.
#include "server/embedding_job.h"

#include "server/matryoshka_dimensions.h"
#include "server/ollama_protocol.h"

namespace pagoda::server {

EmbeddingJob::EmbeddingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, EmbeddingParams params,
                           std::function<void()> on_done)
    : PoolingJob(std::move(ctx), std::move(exchange), "embd-", std::move(on_done)), params_(std::move(params)) {}

HttpResponse EmbeddingJob::error_body(const ApiError& e) const {
  const bool ollama =
      params_.api == EmbeddingParams::Api::kOllama || params_.api == EmbeddingParams::Api::kOllamaLegacy;
  return ollama ? ollama_error_response(e) : e.to_response();
}

HttpResponse EmbeddingJob::success_body(std::vector<Pooled> results, int64_t prompt_tokens) {
  std::vector<std::vector<float>> vectors;
  vectors.reserve(results.size());
  for (Pooled& r : results) {
    // Truncated first, then normalized (vLLM, sentence-transformers): the shorter vector has norm 1 too.
    if (params_.dimensions) truncate_embedding(r.vector, *params_.dimensions);
    if (params_.api == EmbeddingParams::Api::kLlama)
      llama_embd_normalize(r.vector, params_.embd_normalize);
    else if (params_.normalize)
      l2_normalize(r.vector);
    vectors.push_back(std::move(r.vector));
  }
  HttpResponse resp;
  if (params_.api == EmbeddingParams::Api::kOpenAi)
    resp.body = embeddings_response(vectors, params_.encoding, ctx_.model_name, prompt_tokens);
  else if (params_.api == EmbeddingParams::Api::kLlama)
    resp.body = llama_embedding_response(vectors);
  else
    resp.body = ollama_embed_json(vectors, params_.ollama_model, prompt_tokens, (ctx_.engine->now_us() - start_us_) * 1000,
                                  params_.api == EmbeddingParams::Api::kOllamaLegacy);
  return resp;
}

}  // namespace pagoda::server
