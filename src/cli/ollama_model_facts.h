// ollama_model_facts: what Ollama's /api/tags, /api/show and /api/ps say of the loaded model (its family, size
// in parameters and bytes, main weight type, chat template), and the fill-in-the-middle tokens llama-server's
// /infill needs, read from the loaded GGUF. Reads; changes nothing.
#pragma once

#include "loader/chat_metadata.h"
#include "loader/loaded_model.h"
#include "server/llama_protocol.h"
#include "server/ollama_protocol.h"

namespace pagoda::cli {

server::OllamaModelFacts ollama_model_facts(const LoadedModel& loaded, const ChatMetadata& meta);
// The fill-in-the-middle tokens the GGUF names (llama.cpp's fim_* keys, else the older prefix/suffix/middle).
server::FimTokens fim_tokens(const LoadedModel& loaded);

}  // namespace pagoda::cli
