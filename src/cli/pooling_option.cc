// --pooling and the GGUF's pooling_type.
#include "cli/pooling_option.h"

#include <fmt/format.h>

#include "format/gguf_names.h"

namespace pagoda::cli {

Result<PoolingChoice> choose_pooling(const std::optional<std::string>& flag, const LoadedModel& loaded) {
  PoolingChoice c{Pooling::kLast, "the default for decoder models"};
  if (loaded.model->config().encoder) c = PoolingChoice{Pooling::kCls, "the default for encoder models"};
  if (flag) {
    std::optional<Pooling> p = parse_pooling(*flag);
    if (!p || *p == Pooling::kNone || *p == Pooling::kRank)
      return make_error("invalid option: --pooling must be last, mean or cls, got '" + *flag + "'");
    return PoolingChoice{*p, "--pooling"};
  }
  auto arch = loaded.file->get_string(format::gguf_key::kArchitecture);
  if (!arch.ok() || !*arch) return c;
  const std::string key = format::gguf_key::arch_key(**arch, format::gguf_key::kPoolingType);
  auto type = loaded.file->get_u32(key);
  if (!type.ok() || !*type) return c;
  std::optional<Pooling> from_file = pooling_from_gguf_type(**type);
  // A decoder with rank pooling is a Qwen3-Reranker: llama.cpp scores a qwen3 file's last token through its
  // cls.output rows (model/llama_model.h). One without that head would pool something it does not have: refused.
  if (from_file == Pooling::kRank && !loaded.model->config().encoder) {
    if (loaded.model->num_rank_outputs() == 0)
      return make_error(fmt::format(
          "{} = 4 (rank) on a {} decoder without a reranker head: pagoda scores a decoder reranker as llama.cpp "
          "does, a qwen3 file with cls.output.weight (Qwen3-Reranker as llama.cpp's converter writes it)",
          key, **arch));
    return PoolingChoice{Pooling::kLast,
                         fmt::format("{} = 4 (rank): embeddings are the last token's row the head reads", key)};
  }
  // A reranker's embeddings are its classification head's input, the CLS row; its head scores /v1/rerank's pairs.
  if (from_file == Pooling::kRank)
    return PoolingChoice{Pooling::kCls, fmt::format("{} = 4 (rank): embeddings are the CLS row the head reads", key)};
  if (from_file && *from_file != Pooling::kNone) return PoolingChoice{*from_file, key};
  c.source = fmt::format("the default: {} = {} is not a pooling pagoda computes", key, **type);
  return c;
}

std::optional<TokenId> embedding_eos(const LoadedModel& loaded) {
  auto add_eos = loaded.file->get_bool(format::gguf_key::kAddEos);
  if (!add_eos.ok() || !*add_eos || !**add_eos || loaded.tokenizer->eos_id() < 0) return std::nullopt;
  return loaded.tokenizer->eos_id();
}

server::RerankFraming rerank_framing(const LoadedModel& loaded) {
  const format::GgufFile& f = *loaded.file;
  auto flag = [&](const char* key, bool fallback) {
    auto v = f.get_bool(key);
    return v.ok() && *v ? **v : fallback;
  };
  auto id = [&](const char* key) -> std::optional<TokenId> {
    auto v = f.get_u32(key);
    if (!v.ok() || !*v || **v >= uint32_t(loaded.tokenizer->vocab_size())) return std::nullopt;
    return TokenId(**v);
  };
  auto model = f.get_string(format::gguf_key::kTokenizerModel);
  const bool wordpiece = model.ok() && *model && **model == "bert";
  server::RerankFraming framing;
  auto rerank_template = f.get_string(format::gguf_key::kRerankTemplate);
  if (rerank_template.ok() && *rerank_template) {
    framing.prompt_template = std::string(**rerank_template);
    return framing;
  }
  const std::optional<TokenId> sep = id(format::gguf_key::kSeparatorId);
  if (flag(format::gguf_key::kAddBos, true) && loaded.tokenizer->bos_id() >= 0) framing.bos = loaded.tokenizer->bos_id();
  if (flag(format::gguf_key::kAddEos, false)) {
    const std::optional<TokenId> eos = id(format::gguf_key::kEosId);
    framing.eos = eos ? eos : sep;
  }
  if (flag(format::gguf_key::kAddSep, wordpiece)) framing.sep = sep;
  return framing;
}

}  // namespace pagoda::cli
