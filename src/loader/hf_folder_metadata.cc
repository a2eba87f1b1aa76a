// Assembles an HF folder's GGUF metadata from its config, tokenizer and template files.
#include "loader/hf_folder_metadata.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_text.h"
#include "format/gguf_names.h"
#include "format/placeholder_vocabulary.h"
#include "model/hf_gguf.h"
#include "tokenizer/bpe_vocab_gguf_writer.h"
#include "tokenizer/hf_tokenizer_loader.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's text, or "" when it does not exist; an error when it exists but cannot be read.
Result<std::string> read_optional(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(fmt::format("{}: cannot read the file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

// tokenizer_config.json's chat_template: a string, or a list of {"name", "template"} (the "default" one).
Result<std::string> config_chat_template(const std::string& config_text, const std::string& path) {
  if (config_text.empty()) return std::string();
  Result<json> parsed = parse_untrusted_json(config_text);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", path, parsed.error()));
  const json& config = *parsed;
  if (!config.is_object()) return make_error(fmt::format("{}: not a JSON object", path));
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array())
    return make_error(fmt::format("{}: chat_template must be a string or a list of {{\"name\", \"template\"}}, got {}",
                                  path, json_excerpt(*it)));
  for (size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    if (!entry.is_object())
      return make_error(fmt::format("{}: chat_template[{}] must be an object {{\"name\", \"template\"}}, got {}", path,
                                    i, json_excerpt(entry)));
    const auto name = entry.find("name");
    const auto text = entry.find("template");
    if (name == entry.end() || !name->is_string())
      return make_error(fmt::format("{}: chat_template[{}].name must be a string", path, i));
    if (text == entry.end() || !text->is_string())
      return make_error(fmt::format("{}: chat_template[{}].template must be a string", path, i));
    if (name->get_ref<const std::string&>() == "default") return text->get<std::string>();
  }
  return make_error(fmt::format("{}: chat_template lists no template named \"default\"", path));
}

}  // namespace

Result<HfFolderMetadata> hf_folder_metadata(const HfCheckpoint& ckpt, const std::string& name,
                                            const std::string& chat_template) {
  HfFolderMetadata m{hf_gguf_metadata(ckpt, name), ""};
  const fs::path dir(ckpt.dir());
  const int32_t vocab_size = ckpt.config().vocab_size;
  const fs::path tokenizer_path = dir / "tokenizer.json";
  PAGODA_ASSIGN_OR_RETURN(const std::string tokenizer_text, read_optional(tokenizer_path));
  PAGODA_ASSIGN_OR_RETURN(const std::string config_text, read_optional(dir / "tokenizer_config.json"));
  if (tokenizer_text.empty()) {
    format::add_placeholder_vocabulary(m.writer, vocab_size);
    m.tokenizer_note =
        fmt::format("{} has no tokenizer.json: using a placeholder vocabulary of {} tokens", ckpt.dir(), vocab_size);
  } else {
    PAGODA_ASSIGN_OR_RETURN(const std::string generation_text, read_optional(dir / "generation_config.json"));
    PAGODA_ASSIGN_OR_RETURN(const BpeVocab vocab, bpe_vocab_from_hf_json(tokenizer_text, tokenizer_path.string(),
                                                                         config_text, generation_text));
    PAGODA_RETURN_IF_ERROR(add_bpe_vocabulary(vocab, vocab_size, m.writer, tokenizer_path.string()));
  }
  std::string template_text = chat_template;
  if (template_text.empty()) {
    PAGODA_ASSIGN_OR_RETURN(template_text, read_optional(dir / "chat_template.jinja"));
  }
  if (template_text.empty()) {
    PAGODA_ASSIGN_OR_RETURN(template_text, config_chat_template(config_text, (dir / "tokenizer_config.json").string()));
  }
  if (!template_text.empty()) m.writer.set(format::gguf_key::kChatTemplate, format::GgufValue::string(template_text));
  return m;
}

Result<std::string> convert_hf_folder(const HfCheckpoint& ckpt, const std::string& output, const std::string& name,
                                      const std::string& chat_template) {
  PAGODA_ASSIGN_OR_RETURN(HfFolderMetadata m, hf_folder_metadata(ckpt, name, chat_template));
  PAGODA_RETURN_IF_ERROR(write_hf_gguf(ckpt, m.writer, output));
  return m.tokenizer_note;
}

}  // namespace pagoda
