// run_structured_bench and the default cases (structured_bench.h).
#include "bench/structured_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "bench/linear_percentile.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"

namespace pagoda::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

MaskTimeStats stats_of(std::vector<double> samples) {
  MaskTimeStats s;
  s.count = int64_t(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.p50_us = linear_percentile(samples, 50);
  s.p99_us = linear_percentile(samples, 99);
  s.max_us = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean_us = sum / double(samples.size());
  return s;
}

const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}
      },
      "required": ["street", "city", "zip"]
    },
    "active": {"type": "boolean"}
  },
  "required": ["name", "age", "email", "address", "active"]
})";

const char* kToolSchema = R"({
  "type": "object",
  "properties": {
    "location": {"type": "string", "description": "City and country"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "include_hourly": {"type": "boolean"}
  },
  "required": ["location", "unit", "days"],
  "additionalProperties": false
})";

const char* kProductsSchema = R"({
  "type": "array",
  "items": {
    "type": "object",
    "properties": {
      "id": {"type": "integer", "minimum": 1},
      "name": {"type": "string", "minLength": 1, "maxLength": 80},
      "price": {"type": "number", "minimum": 0},
      "in_stock": {"type": "boolean"},
      "categories": {"type": "array", "items": {"enum": ["books", "garden", "kitchen", "toys", "tools"]}}
    },
    "required": ["id", "name", "price", "in_stock"]
  },
  "minItems": 1
})";

const char* kTreeSchema = R"({
  "$defs": {
    "node": {
      "type": "object",
      "properties": {
        "label": {"type": "string"},
        "weight": {"type": "number"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
      },
      "required": ["label"]
    }
  },
  "$ref": "#/$defs/node"
})";

const char* kJsonGbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

const char* kFreeFormDocument = R"({
  "title": "Quarterly report",
  "summary": "Revenue grew 12% while costs stayed flat; the new warehouse opened in March.",
  "figures": {"revenue": 1250000.5, "costs": 830000, "growth": 0.12},
  "regions": [
    {"name": "North", "stores": 14, "open": true},
    {"name": "South", "stores": 9, "open": false, "note": null}
  ],
  "authors": ["Ada Lovelace", "Alan Turing"]
})";

grammar::GrammarSpec schema_spec(const char* text) {
  grammar::GrammarSpec s;
  s.kind = grammar::GrammarSpec::Kind::kJsonSchema;
  s.text = text;
  return s;
}

}  // namespace

std::vector<TokenId> tokens_for_text(const Tokenizer& tokenizer, const grammar::TokenVocabulary& vocab,
                                const std::string& text) {
  std::vector<TokenId> ids = tokenizer.encode(text, false);
  std::string spelled;
  for (const TokenId id : ids) spelled += vocab.token_bytes(id);
  if (spelled == text) return ids;
  ids.clear();
  size_t pos = 0;
  const std::vector<grammar::TrieNode>& trie = vocab.trie();
  while (pos < text.size()) {
    // Walk the preorder trie along text[pos...], remembering the deepest node where a token ends.
    TokenId best = -1;
    size_t best_len = 0;
    uint32_t i = 0, end = uint32_t(trie.size());
    for (size_t depth = 0; pos + depth < text.size(); ++depth) {
      while (i < end && trie[i].byte != uint8_t(text[pos + depth])) i = trie[i].subtree_end;
      if (i >= end) break;
      if (trie[i].num_tokens_here > 0) {
        best = vocab.sorted_id(int32_t(trie[i].tokens_begin));
        best_len = depth + 1;
      }
      end = trie[i].subtree_end;
      ++i;
    }
    if (best < 0) return {};
    ids.push_back(best);
    pos += best_len;
  }
  return ids;
}

std::vector<StructuredCase> default_structured_cases() {
  std::vector<StructuredCase> cases;
  cases.push_back(
      {"schema: person record",
       schema_spec(kPersonSchema),
       {R"({"name": "Maria Garcia", "age": 34, "email": "maria.garcia@example.com", "tags": ["engineer", "runner"], "address": {"street": "12 Elm Street", "city": "Springfield", "zip": "12345"}, "active": true})",
        "{\n  \"name\": \"John Smith\",\n  \"age\": 58,\n  \"email\": \"j.smith@mail.example.org\",\n  \"address\": "
        "{\n    \"street\": \"4 Harbour Road\",\n    \"city\": \"Port Town\",\n    \"zip\": \"90210\"\n  },\n  "
        "\"active\": false\n}",
        R"({"name":"Li Wei","age":7,"email":"li@example.cn","tags":[],"address":{"street":"Main St. 1","city":"Beijing","zip":"10001"},"active":true})"}});
  cases.push_back({"schema: tool arguments",
                   schema_spec(kToolSchema),
                   {R"({"location": "Paris, France", "unit": "celsius", "days": 3})",
                    R"({"location": "San Francisco, USA", "unit": "fahrenheit", "days": 14, "include_hourly": true})",
                    "{\n  \"location\": \"Tokyo\",\n  \"unit\": \"celsius\",\n  \"days\": 7\n}"}});
  cases.push_back(
      {"schema: product list",
       schema_spec(kProductsSchema),
       {R"([{"id": 1, "name": "Garden hose, 20 m", "price": 24.99, "in_stock": true, "categories": ["garden", "tools"]}, {"id": 2, "name": "The Art of Cooking", "price": 18, "in_stock": false, "categories": ["books", "kitchen"]}, {"id": 3, "name": "Wooden train set", "price": 42.5, "in_stock": true}])",
        "[\n  {\"id\": 10, \"name\": \"Chef's knife\", \"price\": 59.0, \"in_stock\": true, \"categories\": "
        "[\"kitchen\"]}\n]"}});
  cases.push_back(
      {"schema: recursive tree",
       schema_spec(kTreeSchema),
       {R"({"label": "root", "weight": 1.5, "children": [{"label": "left", "children": [{"label": "leaf one"}, {"label": "leaf two", "weight": 0.25}]}, {"label": "right", "weight": 3}]})"}});
  grammar::GrammarSpec object;
  object.kind = grammar::GrammarSpec::Kind::kJsonObject;
  cases.push_back({"json_object", object, {kFreeFormDocument}});
  grammar::GrammarSpec gbnf;
  gbnf.kind = grammar::GrammarSpec::Kind::kGbnf;
  gbnf.text = kJsonGbnf;
  cases.push_back({"gbnf: llama.cpp json.gbnf", gbnf, {kFreeFormDocument}});
  grammar::GrammarSpec regex;
  regex.kind = grammar::GrammarSpec::Kind::kRegex;
  regex.text = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun) [0-3][0-9]/[01][0-9]/20[0-9]{2}: [A-Za-z ,.']{1,200}";
  cases.push_back({"regex: dated note",
                   regex,
                   {"Tue 14/05/2024: Met the supplier, agreed on the new prices.", "Sun 01/12/2030: Quiet day."}});
  return cases;
}

Result<StructuredBenchReport> run_structured_bench(const Tokenizer& tokenizer, const std::vector<StructuredCase>& cases,
                                                   int32_t num_warm_passes) {
  StructuredBenchReport report;
  const Clock::time_point vocab_start = Clock::now();
  const std::shared_ptr<const grammar::TokenVocabulary> vocab = grammar::TokenVocabulary::from_tokenizer(tokenizer);
  report.vocab_build_ms = elapsed_us(vocab_start) / 1000.0;
  report.vocab_size = vocab->vocab_size();
  std::vector<uint32_t> mask(vocab->mask_words());
  std::vector<double> all_warm;
  for (const StructuredCase& c : cases) {
    StructuredCaseReport r;
    r.name = c.name;
    grammar::GrammarCompiler compiler(vocab, 0);
    const Clock::time_point compile_start = Clock::now();
    Result<std::shared_ptr<const grammar::CompiledGrammar>> g = compiler.compile(c.spec);
    r.compile_ms = elapsed_us(compile_start) / 1000.0;
    if (!g.ok()) return make_error(fmt::format("bench structured: case '{}': {}", c.name, g.error()));
    r.num_grammar_states = (*g)->grammar().states.size();
    std::vector<std::vector<TokenId>> documents;
    for (const std::string& text : c.instances) {
      documents.push_back(tokens_for_text(tokenizer, *vocab, text));
      if (documents.back().empty())
        return make_error(fmt::format("bench structured: case '{}': an instance cannot be tokenized", c.name));
      r.num_tokens += int64_t(documents.back().size()) + 1;  // and the stop token's mask
    }
    std::vector<double> cold, warm;
    for (int32_t pass = 0; pass <= num_warm_passes; ++pass) {
      std::vector<double>& samples = pass == 0 ? cold : warm;
      for (size_t d = 0; d < documents.size(); ++d) {
        grammar::GrammarMatcher m(*g);
        for (const TokenId id : documents[d]) {
          const Clock::time_point start = Clock::now();
          m.fill_mask(mask);
          samples.push_back(elapsed_us(start));
          if (!(mask[size_t(id) >> 5] >> (id & 31) & 1) || !m.accept_token(id)) {
            return make_error(fmt::format("bench structured: case '{}': instance {} refused at token {} ('{}')", c.name,
                                          d, id, std::string(vocab->token_bytes(id))));
          }
        }
        const Clock::time_point start = Clock::now();
        m.fill_mask(mask);
        samples.push_back(elapsed_us(start));
        if (!m.can_end())
          return make_error(fmt::format("bench structured: case '{}': instance {} is incomplete", c.name, d));
      }
    }
    r.cold = stats_of(cold);
    r.warm = stats_of(warm);
    all_warm.insert(all_warm.end(), warm.begin(), warm.end());
    r.num_state_masks = (*g)->num_built_state_masks();
    r.state_mask_bytes = (*g)->state_mask_bytes();
    report.cases.push_back(r);
  }
  report.all_warm = stats_of(all_warm);
  return report;
}

std::string structured_report_text(const StructuredBenchReport& report) {
  std::string out =
      fmt::format("vocabulary: {} tokens (trie built in {:.1f} ms)\n", report.vocab_size, report.vocab_build_ms);
  out += fmt::format("{:<28} {:>9} {:>7} {:>7} | {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>7} {:>9}\n", "case",
                     "compile", "states", "tokens", "cold p50", "cold p99", "cold max", "warm p50", "warm p99",
                     "warm max", "masks", "mask KiB");
  for (const StructuredCaseReport& c : report.cases) {
    out += fmt::format(
        "{:<28} {:>7.2f}ms {:>7} {:>7} | {:>7.1f}us {:>7.1f}us {:>7.0f}us | {:>7.1f}us {:>7.1f}us {:>7.1f}us | {:>7} "
        "{:>9.0f}\n",
        c.name, c.compile_ms, c.num_grammar_states, c.num_tokens, c.cold.p50_us, c.cold.p99_us, c.cold.max_us,
        c.warm.p50_us, c.warm.p99_us, c.warm.max_us, c.num_state_masks, double(c.state_mask_bytes) / 1024.0);
  }
  out += fmt::format("all warm masks: {} samples, p50 {:.1f} us, p99 {:.1f} us, mean {:.1f} us, max {:.1f} us\n",
                     report.all_warm.count, report.all_warm.p50_us, report.all_warm.p99_us, report.all_warm.mean_us,
                     report.all_warm.max_us);
  return out;
}

std::string structured_report_json(const StructuredBenchReport& report) {
  auto stats = [](const MaskTimeStats& s) {
    return nlohmann::json{
        {"count", s.count}, {"p50_us", s.p50_us}, {"p99_us", s.p99_us}, {"mean_us", s.mean_us}, {"max_us", s.max_us}};
  };
  nlohmann::json out = {{"bench", "structured"},
                        {"vocab_size", report.vocab_size},
                        {"vocab_build_ms", report.vocab_build_ms},
                        {"all_warm", stats(report.all_warm)},
                        {"cases", nlohmann::json::array()}};
  for (const StructuredCaseReport& c : report.cases) {
    out["cases"].push_back({{"name", c.name},
                            {"compile_ms", c.compile_ms},
                            {"states", c.num_grammar_states},
                            {"tokens", c.num_tokens},
                            {"cold", stats(c.cold)},
                            {"warm", stats(c.warm)},
                            {"state_masks", c.num_state_masks},
                            {"state_mask_bytes", c.state_mask_bytes}});
  }
  return out.dump();
}

}  // namespace pagoda::bench
