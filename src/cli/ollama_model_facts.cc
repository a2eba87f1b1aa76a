// ollama_model_facts: the loaded GGUF's tensors and metadata in Ollama's terms.
#include "cli/ollama_model_facts.h"

#include <fmt/format.h>

#include <cctype>
#include <map>

#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "format/gguf_types.h"

namespace pagoda::cli {
namespace {

// Ollama's human count: 7.6B, 137M, 260K.
std::string parameter_size(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.1f}B", double(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.0f}M", double(n) / 1e6);
  return fmt::format("{:.0f}K", double(n) / 1e3);
}

}  // namespace

server::OllamaModelFacts ollama_model_facts(const LoadedModel& loaded, const ChatMetadata& meta) {
  server::OllamaModelFacts f;
  f.family = loaded.model->config().architecture.empty() ? "llama" : loaded.model->config().architecture;
  f.format = loaded.checkpoint ? "safetensors" : "gguf";
  f.chat_template = meta.chat_template.value_or("");
  int64_t params = 0, bytes = 0;
  std::map<std::string, int64_t> bytes_by_type;  // the level is the type most of the weights' bytes are in
  if (loaded.file) {
    for (const format::GgufTensorInfo& t : loaded.file->tensors()) {
      params += t.num_elements();
      bytes += int64_t(t.size_bytes);
      bytes_by_type[std::string(format::ggml_type_name(t.type))] += int64_t(t.size_bytes);
    }
  }
  f.parameter_size = parameter_size(params);
  f.size_bytes = bytes;
  int64_t most = -1;
  for (const auto& [type, b] : bytes_by_type)
    if (b > most) {
      most = b;
      f.quantization_level = type;
    }
  for (char& c : f.quantization_level) c = char(std::toupper(static_cast<unsigned char>(c)));
  return f;
}

server::FimTokens fim_tokens(const LoadedModel& loaded) {
  server::FimTokens fim;
  if (!loaded.file) return fim;
  auto read = [&](const char* key, const char* older) -> std::optional<TokenId> {
    for (const char* k : {key, older}) {
      auto v = loaded.file->get_u32(k);
      if (v.ok() && v->has_value() && int64_t(**v) < loaded.tokenizer->vocab_size()) return TokenId(**v);
    }
    return std::nullopt;
  };
  fim.pre = read(format::gguf_key::kFimPreId, format::gguf_key::kPrefixId);
  fim.suf = read(format::gguf_key::kFimSufId, format::gguf_key::kSuffixId);
  fim.mid = read(format::gguf_key::kFimMidId, format::gguf_key::kMiddleId);
  return fim;
}

}  // namespace pagoda::cli
