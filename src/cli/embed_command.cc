// `pagoda embed [-m MODEL] [--pooling last|mean|cls] [--dimensions N] [--matryoshka-dimensions any|none|N,N...]
// [--no-normalize] [engine flags] TEXT...`: each text's embedding as one JSON line {"index", "num_tokens",
// "embedding"} on stdout, cut to its first N values when asked (a Matryoshka model only), then L2-normalized unless
// --no-normalize (what /v1/embeddings returns for the same text and `dimensions`). Every text is one pooling request;
// the engine batches them.
#include "cli/embed_command.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common_options.h"
#include "cli/engine_options.h"
#include "cli/engine_setup.h"
#include "cli/matryoshka_option.h"
#include "cli/pooling_option.h"
#include "engine/engine.h"
#include "server/embeddings_protocol.h"

namespace pagoda::cli {
namespace {

struct EmbedOptions {
  CommonOptions common;
  EngineCliOptions engine;
  std::optional<std::string> pooling;
  std::optional<int64_t> dimensions;
  std::optional<std::string> matryoshka_dimensions;
  bool no_normalize = false;
  bool no_bos = false;
  std::vector<std::string> texts;
};

int embed(EmbedOptions& o) {
  Result<PreparedEngine> p = prepare_engine(o.common, o.engine);
  if (!p.ok()) return report_error(p.error());
  if (p->followed) return 0;
  const LoadedModel& loaded = p->loaded;
  Result<PoolingChoice> pooling = choose_pooling(o.pooling, loaded);
  if (!pooling.ok()) return report_error(pooling.error());
  std::fprintf(stderr, "pagoda: %s pooling (%s)\n", std::string(pooling_name(pooling->pooling)).c_str(),
               pooling->source.c_str());
  const std::optional<TokenId> eos = embedding_eos(loaded);
  if (eos) std::fprintf(stderr, "pagoda: each text ends with EOS (tokenizer.ggml.add_eos_token)\n");
  Result<MatryoshkaChoice> matryoshka = choose_matryoshka(o.matryoshka_dimensions, loaded);
  if (!matryoshka.ok()) return report_error(matryoshka.error());
  if (o.dimensions) {
    if (*o.dimensions < 1) return report_error("invalid option: --dimensions must be at least 1");
    if (auto e = server::check_embedding_dimensions(*o.dimensions, loaded.model->config().dim, matryoshka->dimensions))
      return report_error("--dimensions: " + e->message + " (Matryoshka sizes from " + matryoshka->source + ")");
  }
  p->resolved.config.pooling = true;
  Result<std::unique_ptr<Engine>> engine = Engine::create(*loaded.model, *loaded.tokenizer, p->resolved.config);
  if (!engine.ok()) return report_error(engine.error());
  std::vector<RequestHandle> handles;
  for (const std::string& text : o.texts) {
    GenerateRequest r;
    r.prompt = loaded.tokenizer->encode(text, !o.no_bos);
    if (eos) r.prompt.push_back(*eos);
    r.prefill_only = true;
    r.pooling = pooling->pooling;
    Result<RequestHandle> h = (*engine)->submit(std::move(r));
    if (!h.ok()) return report_error("text " + std::to_string(handles.size()) + ": " + h.error());
    handles.push_back(*h);
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    RequestOutput out = handles[i].stream->wait_all();
    if (out.embedding.empty()) return report_error("text " + std::to_string(i) + " was not embedded");
    if (o.dimensions) server::truncate_embedding(out.embedding, *o.dimensions);  // before normalizing, as the server
    if (!o.no_normalize) server::l2_normalize(out.embedding);
    const nlohmann::json line = {{"index", i}, {"num_tokens", out.num_prompt_tokens}, {"embedding", out.embedding}};
    std::printf("%s\n", line.dump().c_str());
  }
  return 0;
}

}  // namespace

void add_embed_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EmbedOptions>();
  CLI::App* cmd = app.add_subcommand("embed", "Embeddings of texts (pooled final hidden states), one JSON line each");
  add_common_options(*cmd, o->common);
  add_rope_scaling_options(*cmd, o->common);
  add_engine_options(*cmd, o->engine, /*decodes=*/false);
  cmd->add_option("--pooling", o->pooling, "last, mean or cls (default: the GGUF's <arch>.pooling_type, else last)");
  cmd->add_option("--dimensions", o->dimensions,
                  "the first N values of each embedding, normalized afterwards (a Matryoshka model only: see "
                  "--matryoshka-dimensions)");
  cmd->add_option(kMatryoshkaFlag, o->matryoshka_dimensions, kMatryoshkaFlagHelp);
  cmd->add_flag("--no-normalize", o->no_normalize, "print the pooled vectors as they are, not L2-normalized");
  cmd->add_flag("--no-bos", o->no_bos, "do not add the BOS token to each text");
  cmd->add_option("texts", o->texts, "the texts to embed")->required();
  cmd->callback([o, &exit_code] { exit_code = embed(*o); });
}

}  // namespace pagoda::cli
