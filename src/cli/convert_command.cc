// `pagoda convert --from llama2c CHECKPOINT TOKENIZER -o OUT.gguf [--name NAME]` and
// `pagoda convert --from hf DIR -o OUT.gguf` (Llama / Mistral / Qwen2 / Qwen3 folders, llama.cpp's GGUF names).
#include "cli/convert_command.h"

#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "format/llama2c_converter.h"
#include "loader/hf_folder_metadata.h"

namespace pagoda::cli {
namespace {

struct ConvertOptions {
  CommonOptions common;
  std::string from = "llama2c";
  std::vector<std::string> inputs;
  std::string output;
  std::string name;
  std::string chat_template_file;
};

int convert(const ConvertOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (o.from != "llama2c" && o.from != "hf")
    return report_error("--from " + o.from + " is not supported (supported: llama2c, hf)");
  std::string chat_template;
  if (!o.chat_template_file.empty()) {
    Result<std::string> text = read_text_file(o.chat_template_file);
    if (!text.ok()) return report_error(text.error());
    chat_template = *text;
  }
  if (o.from == "hf") {
    if (o.inputs.size() != 1) return report_error("--from hf takes one input: the model folder");
    Result<std::unique_ptr<HfCheckpoint>> ckpt = HfCheckpoint::open(o.inputs[0]);
    if (!ckpt.ok()) return report_error(ckpt.error());
    if (!(*ckpt)->note().empty()) std::fprintf(stderr, "pagoda: note: %s\n", (*ckpt)->note().c_str());
    Result<std::string> note = convert_hf_folder(**ckpt, o.output, o.name, chat_template);
    if (!note.ok()) return report_error(note.error());
    if (!note->empty()) std::fprintf(stderr, "pagoda: warning: %s\n", note->c_str());
    std::fprintf(stderr, "pagoda: wrote %s\n", o.output.c_str());
    return 0;
  }
  if (o.inputs.size() != 2) return report_error("--from llama2c takes two inputs: CHECKPOINT.bin TOKENIZER.bin");
  format::Llama2cConvertOptions options{o.inputs[0], o.inputs[1], o.output, o.name, chat_template};
  if (Status st = format::convert_llama2c_to_gguf(options); !st.ok()) return report_error(st.message());
  std::fprintf(stderr, "pagoda: wrote %s\n", o.output.c_str());
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a model to GGUF (llama.cpp's conventions)");
  add_common_options(*cmd, options->common, /*with_model=*/false);
  cmd->add_option("--from", options->from, "input format: llama2c or hf (a Hugging Face model folder)")
      ->capture_default_str();
  cmd->add_option("inputs", options->inputs, "input files (llama2c: CHECKPOINT TOKENIZER; hf: DIR)")->required();
  cmd->add_option("-o,--output", options->output, "output GGUF path")->required();
  cmd->add_option("--name", options->name, "general.name (default: the checkpoint's file name)");
  cmd->add_option("--chat-template-file", options->chat_template_file,
                  "a Jinja chat template to store as tokenizer.chat_template");
  cmd->callback([options, &exit_code] { exit_code = convert(*options); });
}

}  // namespace pagoda::cli
