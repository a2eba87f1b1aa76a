// The pooling a command's embeddings use: --pooling when given, else the GGUF's `<arch>.pooling_type` (llama.cpp's
// key; a reranker's rank gives the row its head reads: an encoder's CLS row, a decoder reranker's last), else last-token pooling for a decoder (what decoder
// embedding models use) and CLS for an encoder; and whether each text ends with EOS. Argument
// handling only.
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>

#include "engine/pooling.h"
#include "loader/loaded_model.h"
#include "server/rerank_protocol.h"

namespace pagoda::cli {

struct PoolingChoice {
  Pooling pooling = Pooling::kLast;
  std::string source;  // for the start-up line: "--pooling", "qwen3.pooling_type", "the default ..."
};

// Errors: a --pooling that is not last, mean or cls; a decoder whose GGUF says rank pooling without the head pagoda
// scores it with (a qwen3 file's cls.output.weight, as llama.cpp's converter writes a Qwen3-Reranker).
Result<PoolingChoice> choose_pooling(const std::optional<std::string>& flag, const LoadedModel& loaded);

// The token each text to embed ends with, when the model's tokenizer appends one: its EOS where
// tokenizer.ggml.add_eos_token is true (llama.cpp's key; Qwen3-Embedding's tokenizer appends <|endoftext|>, and
// last-token pooling reads that row). nullopt otherwise.
std::optional<TokenId> embedding_eos(const LoadedModel& loaded);

// How /v1/rerank frames a query and a document, as llama-server does: the GGUF's rerank template
// (tokenizer.chat_template.rerank, as llama.cpp's converter writes Qwen3-Reranker's) where it has one; else as the
// vocabulary's flags say: BOS where it adds BOS, EOS (else SEP) where it adds EOS, SEP where it adds SEP
// (tokenizer.ggml.add_{bos,eos,sep}_token; a WordPiece vocabulary adds BOS, its [CLS], and SEP by default, as
// llama.cpp's).
server::RerankFraming rerank_framing(const LoadedModel& loaded);

}  // namespace pagoda::cli
