// Random, JSONL and ShareGPT prompt sources for the serving benchmark.
#include "bench/serve_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "bench/random_prompt.h"
#include "core/json_text.h"
#include "tokenizer/utf8.h"

namespace pagoda::bench {
namespace {

using json = nlohmann::json;

Result<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(fmt::format("{}: cannot open the dataset file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int32_t count_tokens(const Tokenizer& tokenizer, const std::string& text) {
  return int32_t(tokenizer.encode(text, /*add_bos=*/true).size());
}

std::pair<int32_t, int32_t> length_bounds(int32_t len, double ratio) {
  const int32_t lo = std::max<int32_t>(1, int32_t(std::floor(len * (1.0 - ratio))));
  const int32_t hi = std::max<int32_t>(lo, int32_t(std::ceil(len * (1.0 + ratio))));
  return {lo, hi};
}

// Random byte tokens decode to stray bytes that no JSON body may carry: only whole UTF-8 characters are kept.
std::string valid_utf8_only(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    out.append(text.substr(pos, len));
    pos += len;
  }
  return out;
}

// Random ids decoded to text and encoded again merge or split pieces; trimming the re-encoded ids and
// decoding once more keeps the text near `length` tokens.
std::string random_text(const Tokenizer& tokenizer, int32_t length, std::mt19937_64& rng) {
  std::vector<TokenId> ids = random_prompt(tokenizer, length, rng);
  for (int round = 0; round < 4; ++round) {
    std::vector<TokenId> again = tokenizer.encode(valid_utf8_only(tokenizer.decode(ids)), /*add_bos=*/true);
    // Dropped stray bytes shorten the text: top it up with more random tokens, then trim.
    if (int32_t(again.size()) < length) append_random_tokens(tokenizer, length - int32_t(again.size()), rng, again);
    if (int32_t(again.size()) > length) again.resize(size_t(length));
    if (again == ids) break;
    ids = std::move(again);
  }
  return valid_utf8_only(tokenizer.decode(ids));
}

}  // namespace

Result<std::vector<ServePrompt>> random_serve_prompts(const Tokenizer& tokenizer, const RandomPromptOptions& o) {
  if (o.input_len < 2) return make_error("--input-len must be at least 2 (BOS and one token)");
  if (o.output_len < 1) return make_error("--output-len must be at least 1");
  if (!(o.range_ratio >= 0.0 && o.range_ratio < 1.0)) return make_error("--range-ratio must be in [0, 1)");
  std::mt19937_64 rng(o.seed);
  const auto [in_lo, in_hi] = length_bounds(o.input_len, o.range_ratio);
  const auto [out_lo, out_hi] = length_bounds(o.output_len, o.range_ratio);
  std::uniform_int_distribution<int32_t> in_len(std::max(in_lo, 2), std::max(in_hi, 2));
  std::uniform_int_distribution<int32_t> out_len(out_lo, out_hi);
  std::vector<ServePrompt> prompts;
  for (int32_t i = 0; i < o.num_prompts; ++i) {
    ServePrompt p;
    const int32_t length = in_len(rng);
    p.output_len = out_len(rng);
    if (o.as_text) {
      p.text = random_text(tokenizer, length, rng);
      p.prompt_len = count_tokens(tokenizer, p.text);
    } else {
      p.token_ids = random_prompt(tokenizer, length, rng);
      p.prompt_len = length;
    }
    prompts.push_back(std::move(p));
  }
  return prompts;
}

Result<std::vector<ServePrompt>> load_jsonl_prompts(const std::string& path, const Tokenizer& tokenizer,
                                                    int32_t num_prompts, std::optional<int32_t> output_len) {
  PAGODA_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path));
  std::vector<ServePrompt> entries;
  std::istringstream lines(bytes);
  std::string line;
  for (int64_t line_no = 1; std::getline(lines, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", path, line_no);
    Result<json> parsed = parse_untrusted_json(line);
    if (!parsed.ok()) return make_error(fmt::format("{}: {}", where, parsed.error()));
    const json& j = *parsed;
    if (!j.is_object()) return make_error(fmt::format("{}: expected a JSON object", where));
    ServePrompt p;
    auto prompt = j.find("prompt");
    if (prompt == j.end()) return make_error(fmt::format("{}: 'prompt' is missing", where));
    if (prompt->is_string()) {
      p.text = prompt->get<std::string>();
      if (p.text.empty()) return make_error(fmt::format("{}: 'prompt' is empty", where));
      p.prompt_len = count_tokens(tokenizer, p.text);
    } else if (prompt->is_array() && !prompt->empty()) {
      for (const json& id : *prompt) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tokenizer.vocab_size())
          return make_error(fmt::format("{}: 'prompt' ids must be integers in [0, {})", where, tokenizer.vocab_size()));
        p.token_ids.push_back(TokenId(id.get<int64_t>()));
      }
      p.prompt_len = int32_t(p.token_ids.size());
    } else {
      return make_error(fmt::format("{}: 'prompt' must be a non-empty string or array of token ids", where));
    }
    if (output_len) {
      p.output_len = *output_len;
    } else {
      auto out = j.find("output_len");
      if (out == j.end()) return make_error(fmt::format("{}: 'output_len' is missing (or pass --output-len)", where));
      if (!out->is_number_integer() || out->get<int64_t>() < 1 || out->get<int64_t>() > (1 << 20))
        return make_error(fmt::format("{}: 'output_len' must be a positive integer", where));
      p.output_len = int32_t(out->get<int64_t>());
    }
    entries.push_back(std::move(p));
  }
  if (entries.empty()) return make_error(fmt::format("{}: no prompts in the file", path));
  std::vector<ServePrompt> prompts;
  for (int32_t i = 0; i < num_prompts; ++i) prompts.push_back(entries[size_t(i) % entries.size()]);
  return prompts;
}

Result<std::vector<ServePrompt>> load_sharegpt_prompts(const std::string& path, const Tokenizer& tokenizer,
                                                       int32_t num_prompts, std::optional<int32_t> output_len,
                                                       uint64_t seed) {
  PAGODA_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path));
  Result<json> parsed = parse_untrusted_json(bytes);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", path, parsed.error()));
  const json& j = *parsed;
  if (!j.is_array()) return make_error(fmt::format("{}: expected a ShareGPT JSON array of conversations", path));
  // (prompt, reply) of each entry with a human turn followed by a gpt turn; others are skipped.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& entry = j[i];
    if (!entry.is_object()) return make_error(fmt::format("{}: entry {} is not an object", path, i));
    auto conv = entry.find("conversations");
    if (conv == entry.end() || !conv->is_array())
      return make_error(fmt::format("{}: entry {}: 'conversations' is missing or not an array", path, i));
    std::optional<std::string> human;
    for (const json& turn : *conv) {
      if (!turn.is_object() || !turn.contains("from") || !turn["from"].is_string() || !turn.contains("value") ||
          !turn["value"].is_string())
        return make_error(fmt::format("{}: entry {}: each turn needs string fields 'from' and 'value'", path, i));
      const std::string from = turn["from"].get<std::string>();
      if (!human && from == "human") {
        human = turn["value"].get<std::string>();
      } else if (human && from == "gpt") {
        pairs.emplace_back(*human, turn["value"].get<std::string>());
        break;
      }
    }
  }
  std::mt19937_64 rng(seed);
  std::shuffle(pairs.begin(), pairs.end(), rng);
  std::vector<ServePrompt> entries;
  for (const auto& [prompt, reply] : pairs) {
    if (int32_t(entries.size()) == num_prompts) break;
    ServePrompt p;
    p.text = prompt;
    p.prompt_len = count_tokens(tokenizer, prompt);
    p.output_len = output_len ? *output_len : int32_t(tokenizer.encode(reply, /*add_bos=*/false).size());
    if (p.prompt_len < 4 || p.output_len < 4) continue;
    if (p.prompt_len > 1024 || p.prompt_len + p.output_len > 2048) continue;
    entries.push_back(std::move(p));
  }
  if (entries.empty())
    return make_error(fmt::format("{}: no usable conversations (a human turn then a gpt turn, 4..1024 tokens)", path));
  std::vector<ServePrompt> prompts;
  for (int32_t i = 0; i < num_prompts; ++i) prompts.push_back(entries[size_t(i) % entries.size()]);
  return prompts;
}

}  // namespace pagoda::bench
