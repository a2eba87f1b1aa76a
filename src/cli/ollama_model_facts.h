// ollama_model_facts: what Ollama's /api/tags, /api/show and /api/ps say of the loaded model (its family, size
// in parameters and bytes, main weight type, chat template), read from the loaded GGUF. Reads; changes nothing.
#pragma once

#include "loader/chat_metadata.h"
#include "loader/loaded_model.h"
#include "server/ollama_protocol.h"

namespace pagoda::cli {

server::OllamaModelFacts ollama_model_facts(const LoadedModel& loaded, const ChatMetadata& meta);

}  // namespace pagoda::cli
