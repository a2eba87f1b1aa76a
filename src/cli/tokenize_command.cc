// `pagoda tokenize [-m MODEL] [--no-bos] [--pieces] TEXT`: ids on one line, space-separated (or one
// "id<TAB>piece" line each with --pieces).
#include "cli/tokenize_command.h"

#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "engine/loaded_model.h"

namespace pagoda::cli {
namespace {

struct TokenizeOptions {
  CommonOptions common;
  std::string text;
  bool no_bos = false;
  bool pieces = false;
};

int tokenize(const TokenizeOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  Result<LoadedModel> loaded = load_model(config->model, kernels::best_kernels());
  if (!loaded.ok()) return report_error(loaded.error());
  const Tokenizer& tok = *loaded->tokenizer;
  const std::vector<TokenId> ids = tok.encode(o.text, !o.no_bos);
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
  cmd->add_option("text", options->text, "the text")->required();
  cmd->add_flag("--no-bos", options->no_bos, "do not prepend the BOS token");
  cmd->add_flag("--pieces", options->pieces, "print each id with its piece");
  cmd->callback([options, &exit_code] { exit_code = tokenize(*options); });
}

}  // namespace pagoda::cli
