// pull, ls and rm over the Hugging Face cache.
#include "cli/hub_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "cli/hub_model.h"
#include "hub/hub_cache.h"
#include "hub/hub_settings.h"

namespace pagoda::cli {
namespace {

struct PullOptions {
  std::string spec;
  std::string file;
};

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20)); }

int pull(const PullOptions& o) {
  Result<hub::FetchedModel> model = fetch_hf_model(o.spec, o.file);
  if (!model.ok()) return report_error(model.error());
  std::printf("%s\n", model->path.c_str());
  return 0;
}

int list_cached() {
  Result<hub::HubSettings> settings = hub::hub_settings_from_environment();
  if (!settings.ok()) return report_error(settings.error());
  Result<std::vector<hub::CachedRepo>> repos = hub::HubCache(settings->cache_dir).list();
  if (!repos.ok()) return report_error(repos.error());
  std::fprintf(stderr, "pagoda: cache %s\n", settings->cache_dir.c_str());
  std::printf("%-48s %12s  %s\n", "REPOSITORY", "SIZE", "FILES");
  for (const hub::CachedRepo& r : *repos) {
    std::string files;
    for (const std::string& f : r.files) files += (files.empty() ? "" : ", ") + f;
    std::string size = mib(r.bytes);
    if (r.incomplete_bytes > 0) size += fmt::format(" (+{} partial)", mib(r.incomplete_bytes));
    std::printf("%-48s %12s  %s\n", r.repo.c_str(), size.c_str(), files.empty() ? "-" : files.c_str());
  }
  return 0;
}

int remove_cached(const std::string& repo) {
  Result<hub::HubSettings> settings = hub::hub_settings_from_environment();
  if (!settings.ok()) return report_error(settings.error());
  const hub::HubCache cache(settings->cache_dir);
  Status st = cache.remove(repo);
  if (!st.ok()) return report_error(st.message());
  std::fprintf(stderr, "pagoda: removed %s\n", cache.repo_dir(repo).c_str());
  return 0;
}

}  // namespace

void add_hub_commands(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PullOptions>();
  CLI::App* pull_cmd = app.add_subcommand(
      "pull", "Download a model from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN) into its cache (HF_HOME)");
  pull_cmd->add_option("repo", o->spec, "ORG/NAME[:QUANT] (QUANT default: Q4_K_M, else the closest type present)")
      ->required();
  pull_cmd->add_option("--hf-file", o->file, "an exact GGUF file of the repository (with its other splits)");
  pull_cmd->callback([o, &exit_code] { exit_code = pull(*o); });

  CLI::App* ls_cmd = app.add_subcommand("ls", "List the models in the Hugging Face cache, with their sizes");
  ls_cmd->callback([&exit_code] { exit_code = list_cached(); });

  auto repo = std::make_shared<std::string>();
  CLI::App* rm_cmd = app.add_subcommand("rm", "Remove a model (every revision) from the Hugging Face cache");
  rm_cmd->add_option("repo", *repo, "ORG/NAME")->required();
  rm_cmd->callback([repo, &exit_code] { exit_code = remove_cached(*repo); });
}

}  // namespace pagoda::cli
