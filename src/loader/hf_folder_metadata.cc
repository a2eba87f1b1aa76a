// Assembles an HF folder's GGUF metadata from its config, tokenizer and template files.
#include "loader/hf_folder_metadata.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

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

// sentence-transformers' pooling module (modules.json names it, its folder's config.json says how it pools) as
// llama.cpp's converter reads it: llama.cpp's pooling type (1 mean, 2 cls, 3 last), or nullopt without one.
Result<std::optional<uint32_t>> sentence_transformers_pooling(const fs::path& dir) {
  const fs::path modules_path = dir / "modules.json";
  PAGODA_ASSIGN_OR_RETURN(const std::string modules_text, read_optional(modules_path));
  if (modules_text.empty()) return std::optional<uint32_t>();
  Result<json> modules = parse_untrusted_json(modules_text);
  if (!modules.ok()) return make_error(fmt::format("{}: {}", modules_path.string(), modules.error()));
  if (!modules->is_array()) return make_error(fmt::format("{}: not a JSON list of modules", modules_path.string()));
  std::optional<std::string> pooling_dir;
  for (const json& m : *modules) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string() || !m.contains("path") ||
        !m["path"].is_string())
      return make_error(fmt::format("{}: each module must have a string \"type\" and \"path\", got {}",
                                    modules_path.string(), json_excerpt(m)));
    if (m["type"].get_ref<const std::string&>().ends_with("Pooling")) {
      pooling_dir = m["path"].get<std::string>();
      break;
    }
  }
  if (!pooling_dir) return std::optional<uint32_t>();
  const fs::path relative(*pooling_dir);
  if (relative.is_absolute() || relative.lexically_normal().string().starts_with(".."))
    return make_error(
        fmt::format("{}: the pooling module's path {} leaves the model folder", modules_path.string(), *pooling_dir));
  const fs::path config_path = dir / relative / "config.json";
  PAGODA_ASSIGN_OR_RETURN(const std::string config_text, read_optional(config_path));
  if (config_text.empty())
    return make_error(
        fmt::format("{} names a pooling module but {} is missing", modules_path.string(), config_path.string()));
  Result<json> config = parse_untrusted_json(config_text);
  if (!config.ok()) return make_error(fmt::format("{}: {}", config_path.string(), config.error()));
  if (!config->is_object()) return make_error(fmt::format("{}: not a JSON object", config_path.string()));
  auto flag = [&](const char* key) { return config->contains(key) && (*config)[key] == true; };
  if (flag("pooling_mode_mean_tokens")) return std::optional<uint32_t>(1);
  if (flag("pooling_mode_cls_token")) return std::optional<uint32_t>(2);
  if (flag("pooling_mode_lasttoken")) return std::optional<uint32_t>(3);
  if (auto mode = config->find("pooling_mode"); mode != config->end() && mode->is_string()) {
    if (*mode == "mean") return std::optional<uint32_t>(1);
    if (*mode == "cls") return std::optional<uint32_t>(2);
    if (*mode == "lasttoken") return std::optional<uint32_t>(3);
  }
  return make_error(
      fmt::format("{}: pagoda pools embeddings by mean, cls or lasttoken only, and this config "
                  "enables none of them",
                  config_path.string()));
}

// vLLM's Matryoshka fields of config.json (is_matryoshka, matryoshka_dimensions) as pagoda's GGUF keys.
Status add_matryoshka_keys(const fs::path& dir, format::GgufWriter& w) {
  const fs::path path = dir / "config.json";
  PAGODA_ASSIGN_OR_RETURN(const std::string text, read_optional(path));
  Result<json> config = parse_untrusted_json(text);
  if (!config.ok() || !config->is_object()) return Status::ok_status();  // read_hf_config reported it already
  if (auto it = config->find("is_matryoshka"); it != config->end() && !it->is_null()) {
    if (!it->is_boolean())
      return make_error(
          fmt::format("{}: is_matryoshka must be true or false, got {}", path.string(), json_excerpt(*it)));
    if (it->get<bool>()) w.set(format::gguf_key::kIsMatryoshka, format::GgufValue::boolean(true));
  }
  if (auto it = config->find("matryoshka_dimensions"); it != config->end() && !it->is_null()) {
    std::vector<int32_t> sizes;
    if (it->is_array())
      for (const json& size : *it) {
        if (!size.is_number_integer() || size.get<int64_t>() < 1 || size.get<int64_t>() > INT32_MAX) {
          sizes.clear();
          break;
        }
        sizes.push_back(size.get<int32_t>());
      }
    if (sizes.empty())
      return make_error(fmt::format("{}: matryoshka_dimensions must be a list of positive sizes, got {}", path.string(),
                                    json_excerpt(*it)));
    w.set(format::gguf_key::kMatryoshkaDimensions, format::GgufValue::i32_array(sizes));
  }
  return Status::ok_status();
}

}  // namespace

Result<HfFolderMetadata> hf_folder_metadata(const HfCheckpoint& ckpt, const std::string& name,
                                            const std::string& chat_template) {
  HfFolderMetadata m{hf_gguf_metadata(ckpt, name), ""};
  const fs::path dir(ckpt.dir());
  PAGODA_ASSIGN_OR_RETURN(const std::optional<uint32_t> pooling, sentence_transformers_pooling(dir));
  if (pooling)
    m.writer.set(format::gguf_key::arch_key(ckpt.config().architecture, format::gguf_key::kPoolingType),
                 format::GgufValue::u32(*pooling));
  PAGODA_RETURN_IF_ERROR(add_matryoshka_keys(dir, m.writer));
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
