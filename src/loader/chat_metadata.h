// ChatMetadata: what a chat front end (the server, chat templates) reads from a loaded model's metadata beyond the
// weights and the tokenizer: the model's name, its special tokens' texts for a template's bos_token/eos_token, its
// own chat template, and whether its tokenizer adds BOS. Read once at start-up; a missing key is an empty field.
#pragma once

#include <optional>
#include <string>

#include "loader/loaded_model.h"

namespace pagoda {

struct ChatMetadata {
  std::string name;  // general.name, else the file or folder name without its extension
  std::string bos_text;
  std::string eos_text;
  std::optional<std::string> chat_template;  // tokenizer.chat_template
  std::optional<bool> add_bos;               // tokenizer.ggml.add_bos_token
};

ChatMetadata read_chat_metadata(const LoadedModel& loaded);

}  // namespace pagoda
