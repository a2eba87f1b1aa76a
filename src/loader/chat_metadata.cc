// read_chat_metadata: the GGUF keys a chat front end needs, read from the loaded model's metadata.
#include "loader/chat_metadata.h"

#include <filesystem>
#include <vector>

#include "format/gguf_names.h"

namespace pagoda {

ChatMetadata read_chat_metadata(const LoadedModel& loaded) {
  ChatMetadata m;
  const format::GgufFile& file = *loaded.file;
  if (auto name = file.get_string(format::gguf_key::kName); name.ok() && *name && !(*name)->empty()) {
    m.name = **name;
  } else {
    m.name = std::filesystem::path(loaded.source).stem().string();
  }
  if (auto pieces = file.get_string_array(format::gguf_key::kTokens); pieces.ok() && *pieces) {
    const std::vector<std::string>& v = **pieces;
    const Tokenizer& tok = *loaded.tokenizer;
    if (tok.bos_id() >= 0 && size_t(tok.bos_id()) < v.size()) m.bos_text = v[size_t(tok.bos_id())];
    if (tok.eos_id() >= 0 && size_t(tok.eos_id()) < v.size()) m.eos_text = v[size_t(tok.eos_id())];
  }
  if (auto t = file.get_string(format::gguf_key::kChatTemplate); t.ok() && *t) m.chat_template = **t;
  if (auto add_bos = file.get_bool(format::gguf_key::kAddBos); add_bos.ok() && *add_bos) m.add_bos = **add_bos;
  return m;
}

}  // namespace pagoda
