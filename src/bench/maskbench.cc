// run_maskbench and its report (maskbench.h).
#include "bench/maskbench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <ctime>

#include "bench/linear_percentile.h"
#include "bench/structured_bench.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/grammar_matcher.h"

namespace pagoda::bench {
namespace {

// This thread's CPU time: on a shared machine, wall time would count the time other processes held the core.
struct Clock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return time_point(duration(int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec));
  }
};

double elapsed_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void dump_python(const nlohmann::ordered_json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::ordered_json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += ": ";
      dump_python(it.value(), out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      dump_python(v[i], out);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

// A refusal's reason without where it was found ("schema at #/x: 'not' is not supported" -> "'not' is not
// supported"), so that the same refusal in many schemas counts once.
std::string reason_of(const std::string& error) {
  std::string r = error;
  const size_t at = r.find("schema at ");
  if (at != std::string::npos) {
    const size_t colon = r.find(": ", at);
    if (colon != std::string::npos) r = r.substr(0, at) + r.substr(colon + 2);
  }
  if (r.size() > 120) r.resize(120);
  return r;
}

void add_to(MaskbenchTally& t, const MaskbenchSchemaResult& r) {
  ++t.schemas;
  t.tests += r.num_tests;
  t.invalid_accepted_as_prefix += r.num_invalid_accepted_as_prefix;
  if (r.objects_schema_order > 0) {
    ++t.schema_order_schemas;
    if (r.outcome == MaskbenchOutcome::kValidationError) ++t.schema_order_validation_errors;
  }
  switch (r.outcome) {
    case MaskbenchOutcome::kPassing: ++t.passing; break;
    case MaskbenchOutcome::kCompileError: ++t.compile_errors; break;
    case MaskbenchOutcome::kTimeout: ++t.timeouts; break;
    case MaskbenchOutcome::kValidationError: ++t.validation_errors; break;
    case MaskbenchOutcome::kInvalidationError: ++t.invalidation_errors; break;
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump_python(value, out);
  return out;
}

std::string maskbench_category(const std::string& file_name) {
  std::string name = std::filesystem::path(file_name).filename().string();
  const size_t sep = name.find("---");
  if (sep != std::string::npos) return name.substr(0, sep);
  if (name.ends_with(".json")) name.resize(name.size() - 5);
  const size_t us = name.rfind('_');
  if (us != std::string::npos && us + 1 < name.size() &&
      std::all_of(name.begin() + long(us) + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    name.resize(us);
  return name;
}

std::string_view outcome_name(MaskbenchOutcome outcome) {
  switch (outcome) {
    case MaskbenchOutcome::kPassing: return "passing";
    case MaskbenchOutcome::kCompileError: return "compile error";
    case MaskbenchOutcome::kTimeout: return "timeout";
    case MaskbenchOutcome::kValidationError: return "validation error";
    case MaskbenchOutcome::kInvalidationError: return "invalidation error";
  }
  return "?";
}

Result<MaskbenchSchemaResult> run_maskbench_file(const Tokenizer& tokenizer,
                                                 const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
                                                 const std::string& file, const std::string& text,
                                                 const MaskbenchOptions& options) {
  MaskbenchSchemaResult r;
  r.file = file;
  r.category = maskbench_category(file);
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("schema") || !doc.contains("tests") ||
      !doc["tests"].is_array())
    return make_error(fmt::format("maskbench: {}: not a MaskBench file (an object with 'schema' and 'tests')", file),
                      StatusCode::kInvalidArgument);
  for (const nlohmann::ordered_json& t : doc["tests"]) {
    if (!t.is_object() || !t.contains("data") || !t.contains("valid") || !t["valid"].is_boolean())
      return make_error(fmt::format("maskbench: {}: a test without 'data' and a boolean 'valid'", file),
                        StatusCode::kInvalidArgument);
  }
  r.num_tests = int32_t(doc["tests"].size());

  const Clock::time_point start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.time_limit_s));
  // Properties in any order: MaskBench asks whether every valid document is accepted, whatever its key order.
  grammar::JsonGrammarOptions json_options;
  json_options.any_property_order = true;
  grammar::BuildLimits limits;
  limits.should_stop = [&deadline] { return Clock::now() > deadline; };
  grammar::JsonSchemaNotes notes;
  Result<grammar::Grammar> compiled =
      grammar::json_schema_to_grammar(doc["schema"], json_options, limits, &notes);
  if (!compiled.ok()) {
    r.outcome = compiled.status().code() == StatusCode::kCancelled ? MaskbenchOutcome::kTimeout
                                                                    : MaskbenchOutcome::kCompileError;
    r.detail = compiled.error();
    return r;
  }
  r.objects_schema_order = notes.objects_schema_order;
  const auto g = std::make_shared<const grammar::CompiledGrammar>(std::move(compiled).value(), vocab);
  std::vector<uint32_t> mask(vocab->mask_words());
  {
    // The first mask, as a model's first step would ask for it.
    grammar::GrammarMatcher m(g);
    m.fill_mask(mask);
    r.ttfm_us = elapsed_us(start);
  }
  std::string validation_detail;
  for (size_t i = 0; i < doc["tests"].size(); ++i) {
    const nlohmann::ordered_json& test = doc["tests"][i];
    const bool valid = test["valid"].get<bool>();
    const std::string instance = python_json_dumps(test["data"]);
    const std::vector<TokenId> tokens = tokens_for_text(tokenizer, *vocab, instance);
    if (tokens.empty() && !instance.empty())
      return make_error(fmt::format("maskbench: {}: test #{} cannot be tokenized", file, i));
    grammar::GrammarMatcher m(g);
    bool accepted = true;
    size_t failed_at = 0;
    for (size_t k = 0; k < tokens.size(); ++k) {
      const TokenId id = tokens[k];
      const Clock::time_point t0 = Clock::now();
      m.fill_mask(mask);
      const bool ok = (mask[size_t(id) >> 5] >> (id & 31) & 1) && m.accept_token(id);
      r.mask_us.push_back(elapsed_us(t0));
      if (!ok) {
        accepted = false;
        failed_at = k;
        break;
      }
      if ((k & 63) == 63 && Clock::now() > deadline) {
        r.outcome = MaskbenchOutcome::kTimeout;
        r.detail = fmt::format("test #{}: over {} s at token {}", i, options.time_limit_s, k);
        return r;
      }
    }
    if (accepted && !valid) {
      if (!m.can_end()) ++r.num_invalid_accepted_as_prefix;
      r.outcome = MaskbenchOutcome::kInvalidationError;
      r.detail = fmt::format("test #{}: should reject but didn't{}", i,
                             m.can_end() ? "" : " (every token allowed; the document is incomplete)");
    } else if (!accepted && valid && validation_detail.empty()) {
      std::string prefix;
      for (size_t k = 0; k < failed_at; ++k) prefix += vocab->token_bytes(tokens[k]);
      if (prefix.size() > 60) prefix = "..." + prefix.substr(prefix.size() - 60);
      validation_detail = fmt::format("test #{}: should accept but didn't: after '{}' refused '{}'", i, prefix,
                                      std::string(vocab->token_bytes(tokens[failed_at])));
    }
  }
  if (r.outcome != MaskbenchOutcome::kInvalidationError && !validation_detail.empty()) {
    r.outcome = MaskbenchOutcome::kValidationError;
    r.detail = validation_detail;
    if (r.objects_schema_order > 0)
      r.detail += fmt::format(" ({} objects kept in 'properties' order: over the any-order budget)",
                              r.objects_schema_order);
  }
  if (Clock::now() > deadline) {
    r.outcome = MaskbenchOutcome::kTimeout;
    r.detail = fmt::format("over {} s", options.time_limit_s);
  }
  return r;
}

MaskbenchPercentiles maskbench_percentiles(std::vector<double> samples) {
  MaskbenchPercentiles p;
  p.count = int64_t(samples.size());
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.p50 = linear_percentile(samples, 50);
  p.p90 = linear_percentile(samples, 90);
  p.p99 = linear_percentile(samples, 99);
  p.p100 = samples.back();
  return p;
}

Result<MaskbenchReport> run_maskbench(const Tokenizer& tokenizer, const std::string& dir,
                                      const MaskbenchOptions& options) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  if (ec) return make_error(fmt::format("maskbench: cannot read the folder {}: {}", dir, ec.message()));
  if (files.empty()) return make_error(fmt::format("maskbench: no *.json file in {}", dir));
  std::sort(files.begin(), files.end());

  MaskbenchReport report;
  const std::shared_ptr<const grammar::TokenVocabulary> vocab = grammar::TokenVocabulary::from_tokenizer(tokenizer);
  report.vocab_size = vocab->vocab_size();
  std::map<std::string, std::vector<double>> ttfm, masks;
  std::vector<double> all_ttfm, all_masks;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return make_error(fmt::format("maskbench: cannot read {}", path));
    const std::string name = std::filesystem::path(path).filename().string();
    PAGODA_ASSIGN_OR_RETURN(MaskbenchSchemaResult r, run_maskbench_file(tokenizer, vocab, name, text.str(), options));
    add_to(report.categories[r.category], r);
    add_to(report.total, r);
    if (r.outcome == MaskbenchOutcome::kCompileError) ++report.compile_error_reasons[reason_of(r.detail)];
    if (r.ttfm_us > 0) {
      ttfm[r.category].push_back(r.ttfm_us);
      all_ttfm.push_back(r.ttfm_us);
    }
    if (r.ttfm_us > 0) report.slowest_ttfm.emplace_back(r.ttfm_us, name);
    if (!r.mask_us.empty())
      report.slowest_mask.emplace_back(*std::max_element(r.mask_us.begin(), r.mask_us.end()), name);
    std::vector<double>& cat = masks[r.category];
    cat.insert(cat.end(), r.mask_us.begin(), r.mask_us.end());
    all_masks.insert(all_masks.end(), r.mask_us.begin(), r.mask_us.end());
    if (r.outcome != MaskbenchOutcome::kPassing) {
      r.mask_us = {};
      report.failures.push_back(std::move(r));
    }
  }
  for (auto* slowest : {&report.slowest_ttfm, &report.slowest_mask}) {
    const size_t keep = std::min<size_t>(size_t(std::max(0, options.num_slowest)), slowest->size());
    std::partial_sort(slowest->begin(), slowest->begin() + std::ptrdiff_t(keep), slowest->end(), std::greater<>());
    slowest->resize(keep);
  }
  for (auto& [name, tally] : report.categories) {
    tally.ttfm_us = maskbench_percentiles(std::move(ttfm[name]));
    tally.mask_us = maskbench_percentiles(std::move(masks[name]));
  }
  report.total.ttfm_us = maskbench_percentiles(std::move(all_ttfm));
  report.total.mask_us = maskbench_percentiles(std::move(all_masks));
  return report;
}

std::string maskbench_report_text(const MaskbenchReport& report) {
  std::string out = fmt::format("vocabulary: {} tokens; single thread\n", report.vocab_size);
  out += fmt::format("{:<22} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>9} {:>9} | {:>8} {:>8} {:>9}\n",
                     "category", "schemas", "passing", "pass%", "compile", "timeout", "valid", "invalid",
                     "ttfm p50", "ttfm p99", "mask p50", "mask p99", "tokens");
  auto row = [&out](const std::string& name, const MaskbenchTally& t) {
    out += fmt::format(
        "{:<22} {:>7} {:>8} {:>6.1f}% {:>7} {:>7} {:>7} {:>7} | {:>7.2f}ms {:>7.2f}ms | {:>6.1f}us {:>6.1f}us {:>9}\n",
        name, t.schemas, t.passing, t.schemas ? 100.0 * t.passing / t.schemas : 0.0, t.compile_errors, t.timeouts,
        t.validation_errors, t.invalidation_errors, t.ttfm_us.p50 / 1000, t.ttfm_us.p99 / 1000, t.mask_us.p50,
        t.mask_us.p99, t.mask_us.count);
  };
  for (const auto& [name, tally] : report.categories) row(name, tally);
  row("TOTAL", report.total);
  const MaskbenchTally& t = report.total;
  out += fmt::format("time to first mask (compile + first mask): p50 {:.2f} ms, p90 {:.2f} ms, p99 {:.2f} ms, "
                     "p100 {:.2f} ms over {} schemas\n",
                     t.ttfm_us.p50 / 1000, t.ttfm_us.p90 / 1000, t.ttfm_us.p99 / 1000, t.ttfm_us.p100 / 1000,
                     t.ttfm_us.count);
  out += fmt::format("time per mask (mask + commit): p50 {:.1f} us, p90 {:.1f} us, p99 {:.1f} us, p100 {:.0f} us "
                     "over {} tokens\n",
                     t.mask_us.p50, t.mask_us.p90, t.mask_us.p99, t.mask_us.p100, t.mask_us.count);
  out += fmt::format("invalid instances accepted token by token but incomplete: {}\n", t.invalid_accepted_as_prefix);
  for (const auto& [title, slowest] : {std::pair{"slowest by time to first mask", &report.slowest_ttfm},
                                       std::pair{"slowest by their slowest mask", &report.slowest_mask}}) {
    if (slowest->empty()) continue;
    out += fmt::format("{}:\n", title);
    for (const auto& [us, file] : *slowest) out += fmt::format("  {:>10.1f} us  {}\n", us, file);
  }
  out += fmt::format("schemas with objects kept in 'properties' order (over the any-order budget): {}, {} of them "
                     "validation errors\n",
                     t.schema_order_schemas, t.schema_order_validation_errors);
  std::vector<std::pair<int32_t, std::string>> reasons;
  for (const auto& [reason, n] : report.compile_error_reasons) reasons.emplace_back(n, reason);
  std::sort(reasons.rbegin(), reasons.rend());
  if (!reasons.empty()) out += "most frequent compile errors:\n";
  for (size_t i = 0; i < reasons.size() && i < 15; ++i)
    out += fmt::format("  {:>5}  {}\n", reasons[i].first, reasons[i].second);
  return out;
}

std::string maskbench_report_json(const MaskbenchReport& report) {
  auto pct = [](const MaskbenchPercentiles& p) {
    return nlohmann::json{{"count", p.count}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"p100", p.p100}};
  };
  auto tally = [&pct](const MaskbenchTally& t) {
    return nlohmann::json{{"schemas", t.schemas},
                          {"passing", t.passing},
                          {"compile_errors", t.compile_errors},
                          {"timeouts", t.timeouts},
                          {"validation_errors", t.validation_errors},
                          {"invalidation_errors", t.invalidation_errors},
                          {"tests", t.tests},
                          {"invalid_accepted_as_prefix", t.invalid_accepted_as_prefix},
                          {"schema_order_schemas", t.schema_order_schemas},
                          {"schema_order_validation_errors", t.schema_order_validation_errors},
                          {"ttfm_us", pct(t.ttfm_us)},
                          {"mask_us", pct(t.mask_us)}};
  };
  nlohmann::json out = {{"bench", "maskbench"}, {"vocab_size", report.vocab_size}, {"total", tally(report.total)}};
  out["categories"] = nlohmann::json::object();
  for (const auto& [name, t] : report.categories) out["categories"][name] = tally(t);
  out["failures"] = nlohmann::json::array();
  for (const MaskbenchSchemaResult& r : report.failures)
    out["failures"].push_back(
        {{"file", r.file}, {"outcome", std::string(outcome_name(r.outcome))}, {"detail", r.detail}});
  for (const auto& [key, slowest] :
       {std::pair{"slowest_ttfm", &report.slowest_ttfm}, std::pair{"slowest_mask", &report.slowest_mask}}) {
    out[key] = nlohmann::json::array();
    for (const auto& [us, file] : *slowest) out[key].push_back({{"file", file}, {"us", us}});
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pagoda::bench
