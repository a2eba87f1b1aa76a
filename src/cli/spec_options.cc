// Speculative decoding flags and their resolution.
#include "cli/spec_options.h"

#include <fmt/format.h>

namespace pagoda::cli {

void add_spec_options(CLI::App& app, SpecCliOptions& o) {
  app.add_option("--spec", o.method,
                 "speculative decoding: none (default) or ngram (prompt lookup: drafts copied from where the "
                 "sequence's last tokens occurred before; greedy output unchanged, sampling keeps its distribution)");
  app.add_option("--spec-tokens", o.num_tokens, "drafts verified per sequence and step at most (with --spec)")
      ->capture_default_str();
  app.add_flag("--spec-fixed", o.fixed_length,
               "verify every draft the drafter has, up to --spec-tokens (default: per sequence, the number that "
               "maximizes expected tokens per step cost, from its acceptance rate and the step cost measured online)");
  app.add_option("--spec-ngram-min", o.ngram_min, "--spec ngram: shortest suffix looked up")->capture_default_str();
  app.add_option("--spec-ngram-max", o.ngram_max, "--spec ngram: longest suffix looked up, tried first")
      ->capture_default_str();
}

Status apply_spec_options(const SpecCliOptions& o, EngineConfig& c) {
  if (o.method == "none") {
    c.spec = SpecDecodeConfig{};
    c.scheduler.num_speculative_tokens = 0;
    return Status();
  }
  if (o.method != "ngram")
    return make_error(fmt::format("invalid option: --spec must be none or ngram, got '{}'", o.method));
  if (o.num_tokens < 1 || o.num_tokens > 64)
    return make_error(fmt::format("invalid option: --spec-tokens must be in [1, 64], got {}", o.num_tokens));
  if (o.ngram_min < 1 || o.ngram_min > o.ngram_max || o.ngram_max > 64)
    return make_error(
        fmt::format("invalid option: n-gram sizes must satisfy 1 <= --spec-ngram-min <= "
                    "--spec-ngram-max <= 64, got {} and {}",
                    o.ngram_min, o.ngram_max));
  c.spec.method = SpecMethod::kNgram;
  c.spec.ngram_min = o.ngram_min;
  c.spec.ngram_max = o.ngram_max;
  c.scheduler.num_speculative_tokens = o.num_tokens;
  c.scheduler.adaptive_num_speculative_tokens = !o.fixed_length;
  return Status();
}

std::string describe_spec(const EngineConfig& c) {
  switch (c.spec.method) {
    case SpecMethod::kNone: return "off";
    case SpecMethod::kNgram:
      return fmt::format("ngram, up to {} tokens ({}), n-grams {}..{}", c.scheduler.num_speculative_tokens,
                         c.scheduler.adaptive_num_speculative_tokens ? "adaptive" : "fixed", c.spec.ngram_min,
                         c.spec.ngram_max);
  }
  return "off";
}

}  // namespace pagoda::cli
