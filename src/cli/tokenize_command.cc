// `pagoda tokenize [-m MODEL] [--no-bos] [--no-parse-special] [--pieces] TEXT`: ids on one line, space-separated
// (or one "id<TAB>piece" line each with --pieces). --no-parse-special (either form) reads special tokens written
// in the text as plain text.
// `pagoda tokenize --tokenizer tokenizer.json|MODEL.gguf [--no-special] [--jsonl] [TEXT]`: only the tokenizer is
// loaded; the ids print as a JSON array. --no-special adds no BOS (special tokens written in the text are still
// matched, as HF's add_special_tokens=False does); --jsonl encodes one JSON string per stdin line, one array per
// line out.
// `pagoda tokenize --chat-template FILE.jinja --jsonl`: renders, per stdin line, a JSON conversation
// {"messages": [{role, content, tool_calls, tool_call_id, name}...], "add_generation_prompt": bool, "bos_token",
// "eos_token", and any other key as template context (tools, enable_thinking, ...)} with the server's Jinja engine
// and prints the prompt text as one JSON string per line (the chat-template parity checks' hook).
#include "cli/tokenize_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/common_options.h"
#include "core/json_text.h"
#include "loader/loaded_model.h"
#include "format/gguf_reader.h"
#include "chat/chat_template.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "chat/jinja_template.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::cli {
namespace {

struct TokenizeOptions {
  CommonOptions common;
  std::string text;
  std::string tokenizer_path;
  std::string chat_template_path;
  bool no_bos = false;
  bool pieces = false;
  bool no_special = false;
  bool no_parse_special = false;
  bool jsonl = false;
};

Result<std::unique_ptr<Tokenizer>> load_tokenizer_only(const std::string& path) {
  if (path.ends_with(".json")) return tokenizer_from_hf_json(path);
  PAGODA_ASSIGN_OR_RETURN(const format::GgufFile file, format::GgufFile::open(path));
  return tokenizer_from_gguf(file);
}

std::string ids_json(const std::vector<TokenId>& ids) { return nlohmann::json(ids).dump(); }

// --tokenizer: JSON arrays, one per text.
int tokenize_with_file(const TokenizeOptions& o) {
  Result<std::unique_ptr<Tokenizer>> tok = load_tokenizer_only(o.tokenizer_path);
  if (!tok.ok()) return report_error(tok.error());
  const bool add_bos = !o.no_special && !o.no_bos;
  const bool parse_special = !o.no_parse_special;
  if (!o.jsonl) {
    std::printf("%s\n", ids_json((*tok)->encode(o.text, add_bos, parse_special)).c_str());
    return 0;
  }
  std::string line;
  for (size_t line_number = 1; std::getline(std::cin, line); ++line_number) {
    Result<nlohmann::json> text = parse_untrusted_json(line);
    if (!text.ok() || !text->is_string()) {
      return report_error(fmt::format("stdin line {}: expected one JSON string per line", line_number));
    }
    std::printf("%s\n", ids_json((*tok)->encode(text->get_ref<const std::string&>(), add_bos, parse_special)).c_str());
  }
  return 0;
}

// --chat-template: one rendered prompt (a JSON string) per stdin conversation.
int render_chat_lines(const TokenizeOptions& o) {
  std::ifstream in(o.chat_template_path, std::ios::binary);
  if (!in) return report_error(fmt::format("{}: cannot read the chat template", o.chat_template_path));
  const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<JinjaTemplate> program = JinjaTemplate::parse(source);
  if (!program.ok()) return report_error(fmt::format("{}: {}", o.chat_template_path, program.error()));
  std::string line;
  for (size_t line_number = 1; std::getline(std::cin, line); ++line_number) {
    const auto fail = [&](std::string_view why) {
      return report_error(fmt::format("stdin line {}: {}", line_number, why));
    };
    Result<nlohmann::json> parsed = parse_untrusted_json(line);
    if (!parsed.ok()) return fail(parsed.error());
    // Key order matters to a template (tools print as written, as transformers keeps them): read ordered.
    const nlohmann::ordered_json chat = nlohmann::ordered_json::parse(line, nullptr, false);
    if (!chat.is_object() || !chat.contains("messages") || !chat["messages"].is_array()) {
      return fail("expected a JSON object with a messages array");
    }
    std::vector<ChatMessage> messages;
    for (const nlohmann::ordered_json& m : chat["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !(m["content"].is_string() || m["content"].is_null())) {
        return fail("each message needs a string role and a string (or null) content");
      }
      ChatMessage message{m["role"].get<std::string>(), m["content"].is_string() ? m["content"].get<std::string>() : ""};
      // An assistant's tool_calls ([{id, function: {name, arguments}}], arguments an object or JSON text) and a
      // tool message's tool_call_id and name, as the server takes them.
      if (const auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
        if (!calls->is_array()) return fail("tool_calls must be an array");
        for (const nlohmann::ordered_json& c : *calls) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
              !c["function"].contains("name") || !c["function"]["name"].is_string())
            return fail("each tool call needs function.name");
          ToolCall call;
          if (c.contains("id") && c["id"].is_string()) call.id = c["id"].get<std::string>();
          call.name = c["function"]["name"].get<std::string>();
          const nlohmann::ordered_json args = c["function"].value("arguments", nlohmann::ordered_json::object());
          call.arguments = args.is_string() ? args.get<std::string>() : args.dump();
          message.tool_calls.push_back(std::move(call));
        }
      }
      for (auto [key, out] : {std::pair<const char*, std::string*>{"tool_call_id", &message.tool_call_id},
                              {"name", &message.name}}) {
        const auto it = m.find(key);
        if (it == m.end() || it->is_null()) continue;
        if (!it->is_string()) return fail(fmt::format("{} must be a string", key));
        *out = it->get<std::string>();
      }
      messages.push_back(std::move(message));
    }
    // Anything else at the top level (tools, enable_thinking, date_string, ...) is template context, as
    // apply_chat_template's keyword arguments are.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (const auto& [key, value] : chat.items())
      if (key != "messages" && key != "add_generation_prompt" && key != "bos_token" && key != "eos_token")
        extra[key] = value;
    // Optional fields: absent or null is the default, any other type is an error naming the field.
    std::string bos_token, eos_token;
    for (auto [key, out] : {std::pair<const char*, std::string*>{"bos_token", &bos_token}, {"eos_token", &eos_token}}) {
      const auto it = chat.find(key);
      if (it == chat.end() || it->is_null()) continue;
      if (!it->is_string()) return fail(fmt::format("{} must be a string", key));
      *out = it->get<std::string>();
    }
    bool add_generation_prompt = false;
    if (const auto it = chat.find("add_generation_prompt"); it != chat.end() && !it->is_null()) {
      if (!it->is_boolean()) return fail("add_generation_prompt must be true or false");
      add_generation_prompt = it->get<bool>();
    }
    Result<std::string> prompt =
        render_jinja_chat(*program, messages, add_generation_prompt, bos_token, eos_token, extra);
    if (!prompt.ok()) return fail(prompt.error());
    // A template may write bytes that are not UTF-8: shown as U+FFFD rather than a JSON exception.
    std::printf("%s\n", nlohmann::json(*prompt).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

int tokenize(const TokenizeOptions& o) {
  if (!o.chat_template_path.empty()) {
    if (!o.jsonl) return report_error("--chat-template needs --jsonl (conversations on stdin)");
    return render_chat_lines(o);
  }
  if (!o.tokenizer_path.empty()) return tokenize_with_file(o);
  if (o.jsonl || o.no_special) return report_error("--jsonl and --no-special need --tokenizer");
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  Result<LoadedModel> loaded = load_model(config->model, kernels::best_kernels());
  if (!loaded.ok()) return report_error(loaded.error());
  const Tokenizer& tok = *loaded->tokenizer;
  const std::vector<TokenId> ids = tok.encode(o.text, !o.no_bos, !o.no_parse_special);
  if (o.pieces) {
    TokenId prev = -1;
    for (TokenId id : ids) {
      std::printf("%d\t%s\n", id, tok.token_bytes(id, prev).c_str());
      prev = id;
    }
    return 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i == 0 ? "" : " ", ids[i]);
  std::printf("\n");
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  add_common_options(*cmd, options->common);
  cmd->add_option("text", options->text, "the text (not with --jsonl)");
  cmd->add_option("--tokenizer", options->tokenizer_path,
                  "load only this tokenizer (a tokenizer.json or a GGUF) and print the ids as a JSON array");
  cmd->add_option("--chat-template", options->chat_template_path,
                  "with --jsonl: render each stdin conversation with this Jinja chat template (prints JSON strings)");
  cmd->add_flag("--no-bos", options->no_bos, "do not prepend the BOS token");
  cmd->add_flag("--no-special", options->no_special,
                "with --tokenizer: add no BOS/EOS (special tokens in the text are still matched)");
  cmd->add_flag("--no-parse-special", options->no_parse_special,
                "special tokens written in the text are plain text (llama.cpp's parse_special = false)");
  cmd->add_flag("--jsonl", options->jsonl, "with --tokenizer: read one JSON string per stdin line");
  cmd->add_flag("--pieces", options->pieces, "print each id with its piece");
  cmd->callback([options, &exit_code] { exit_code = tokenize(*options); });
}

}  // namespace pagoda::cli
