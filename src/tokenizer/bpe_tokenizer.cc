// BpeTokenizer: building the lookup tables (token -> id, merge pair -> rank, byte -> id, added tokens by first
// byte) with every reference checked, and the encode pipeline HF's tokenizers run for byte-level BPE.
#include "tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/byte_piece.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr int8_t kNormal = 0;
constexpr int8_t kAddedText = 1;
constexpr int8_t kAddedSpecial = 2;
constexpr int8_t kHarmonyMarker = 3;  // special, yet decoded to its text (see create)

// gpt-oss's harmony format: a reply is several messages (its analysis, then the final answer or a call), each
// closed by <|end|>; only <|return|> and <|call|> end the reply. The markers that structure it decode to their
// text, so that the reply can be read (chat/reasoning_parser.h), as llama.cpp renders them.
constexpr std::string_view kHarmonyEnds[] = {"<|return|>", "<|call|>"};
constexpr std::string_view kHarmonyMarkers[] = {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>",
                                                "<|end|>"};

uint64_t pair_key(TokenId left, TokenId right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

// NFC of `text`; text that is not valid UTF-8 is left as it is (ICU would replace the bad bytes, and byte-level
// BPE must see every byte).
std::string nfc(std::string_view text) {
  if (!is_valid_utf8(text)) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return std::string(text);
  const icu::UnicodeString source = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size())));
  if (normalizer->isNormalized(source, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = normalizer->normalize(source, status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

// Bytes no valid UTF-8 text contains; byte-level vocabularies may leave them out (llama.cpp reads invalid UTF-8
// as U+FFFD).
bool never_in_utf8(uint8_t b) { return b == 0xC0 || b == 0xC1 || b >= 0xF5; }
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
constexpr std::string_view kUtf8SpaceMarker = "\xE2\x96\x81";  // U+2581: a space in a UTF-8 (non-byte-level) vocabulary

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocab vocab, PreTokenizer pre) : vocab_(std::move(vocab)), pre_(std::move(pre)) {}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(BpeVocab vocab, std::string_view source) {
  const auto fail = [&](const std::string& message) { return make_error(fmt::format("{}: {}", source, message)); };
  Result<PreTokenizer> pre = PreTokenizer::create(vocab.split_regexes, vocab.regex_dialect);
  if (!pre.ok()) return fail(pre.error());
  if (vocab.tokens.size() >= size_t(std::numeric_limits<int32_t>::max())) return fail("too many tokens");
  for (const AddedToken& added : vocab.added) {
    if (added.id < 0 || added.id >= std::numeric_limits<int32_t>::max() / 2) {
      return fail(fmt::format("added token '{}' has id {}, outside 0..2^30", added.content, added.id));
    }
    if (added.content.empty()) return fail(fmt::format("added token {} has empty content", added.id));
    if (size_t(added.id) >= vocab.tokens.size()) vocab.tokens.resize(size_t(added.id) + 1);
  }
  const auto num_tokens = int32_t(vocab.tokens.size());
  for (const auto& [name, id] : {std::pair{"bos", vocab.bos_id}, std::pair{"eos", vocab.eos_id}}) {
    if (id < -1 || id >= num_tokens) return fail(fmt::format("the {} id {} is outside the vocabulary", name, id));
  }
  if (vocab.add_bos && vocab.bos_id == -1) return fail("BOS is to be added but there is no BOS token");

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(vocab), std::move(pre).value()));
  const BpeVocab& v = tok->vocab_;
  tok->token_to_id_.reserve(v.tokens.size());
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (!v.tokens[id].empty()) tok->token_to_id_.emplace(v.tokens[id], TokenId(id));
  }
  for (int b = 0; b < 256; ++b) {
    const std::string spelled =
        v.byte_level ? byte_level_encode(std::string(1, char(b))) : fmt::format("<0x{:02X}>", b);
    const auto it = tok->token_to_id_.find(spelled);
    // A vocabulary may lack some bytes (llama.cpp loads it): see encode_piece for what such a byte becomes.
    tok->byte_to_id_[b] = it == tok->token_to_id_.end() ? -1 : it->second;
  }
  tok->merges_.reserve(v.merges.size());
  for (size_t rank = 0; rank < v.merges.size(); ++rank) {
    const auto& [left, right] = v.merges[rank];
    const auto l = tok->token_to_id_.find(left);
    const auto r = tok->token_to_id_.find(right);
    const auto m = tok->token_to_id_.find(left + right);
    if (l == tok->token_to_id_.end() || r == tok->token_to_id_.end() || m == tok->token_to_id_.end()) {
      const std::string& missing = l == tok->token_to_id_.end()   ? left
                                   : r == tok->token_to_id_.end() ? right
                                                                  : left + right;
      return fail(fmt::format("merges[{}] ('{} {}') uses '{}', which is not in the vocabulary", rank, left, right,
                              missing));
    }
    tok->merges_.try_emplace(pair_key(l->second, r->second), Merge{int32_t(rank), m->second});
  }
  tok->added_kind_.assign(v.tokens.size(), kNormal);
  tok->added_by_first_byte_.resize(256);
  for (size_t i = 0; i < v.added.size(); ++i) {
    tok->added_kind_[size_t(v.added[i].id)] = v.added[i].special ? kAddedSpecial : kAddedText;
    tok->added_by_first_byte_[uint8_t(v.added[i].content[0])].push_back(i);
  }
  for (auto& bucket : tok->added_by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](size_t a, size_t b) { return v.added[a].content.size() > v.added[b].content.size(); });
  }
  std::vector<TokenId>& stops = tok->vocab_.stop_ids;
  for (const TokenId id : stops) {
    if (id < 0 || id >= num_tokens) return fail(fmt::format("the stop token id {} is outside the vocabulary", id));
  }
  const auto special_id = [&v](std::string_view text) -> TokenId {
    for (const AddedToken& added : v.added)
      if (added.special && added.content == text) return added.id;
    return -1;
  };
  const bool harmony = special_id("<|channel|>") >= 0 && special_id("<|message|>") >= 0 &&
                       special_id(kHarmonyEnds[0]) >= 0 && special_id(kHarmonyEnds[1]) >= 0;
  const auto add_stop = [&stops](TokenId id) {
    if (std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
  };
  for (const AddedToken& added : v.added) {
    if (!added.special) continue;
    for (const char* text : kEndOfTurnTexts)
      if (added.content == text && !(harmony && added.content == "<|end|>")) add_stop(added.id);
  }
  if (harmony) {
    for (std::string_view end : kHarmonyEnds) add_stop(special_id(end));
    std::erase(stops, special_id("<|end|>"));
    for (std::string_view marker : kHarmonyMarkers)
      if (const TokenId id = special_id(marker); id >= 0) tok->added_kind_[size_t(id)] = kHarmonyMarker;
  }
  return tok;
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> out;
  if (add_bos && vocab_.add_bos) out.push_back(vocab_.bos_id);
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = nullptr;
    for (const size_t i : added_by_first_byte_[uint8_t(text[pos])]) {
      if (!parse_special && vocab_.added[i].special) continue;
      if (text.substr(pos).starts_with(vocab_.added[i].content)) {
        match = &vocab_.added[i];  // buckets are longest first: the first match is the longest
        break;
      }
    }
    if (!match) {
      ++pos;
      continue;
    }
    size_t plain_end = pos;
    if (match->lstrip) {
      while (plain_end > plain_start && is_space(text[plain_end - 1])) --plain_end;
    }
    encode_plain(text.substr(plain_start, plain_end - plain_start), out);
    out.push_back(match->id);
    pos += match->content.size();
    if (match->rstrip) {
      while (pos < text.size() && is_space(text[pos])) ++pos;
    }
    plain_start = pos;
  }
  encode_plain(text.substr(plain_start), out);
  return out;
}

void BpeTokenizer::encode_plain(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::string normalized;
  if (vocab_.nfc) {
    normalized = nfc(text);
    text = normalized;
  }
  if (!vocab_.byte_level) {
    std::string escaped;  // spaces spelled U+2581, as the vocabulary spells them
    escaped.reserve(text.size());
    for (const char c : text) {
      if (c == ' ') {
        escaped += kUtf8SpaceMarker;
      } else {
        escaped += c;
      }
    }
    for (const std::string_view piece : pre_.split(escaped)) encode_utf8_piece(piece, out);
    return;
  }
  for (const std::string_view piece : pre_.split(text)) encode_piece(piece, out);
}

void BpeTokenizer::encode_utf8_piece(std::string_view piece, std::vector<TokenId>& out) const {
  // A run of newlines that is a token is taken whole (llama.cpp's Gemma 4 rule), as is any piece with
  // ignore_merges.
  const bool newlines = piece.find_first_not_of('\n') == std::string_view::npos;
  if (vocab_.ignore_merges || newlines) {
    const auto it = token_to_id_.find(piece);
    if (it != token_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // One symbol per UTF-8 character (a stray byte alone): its token, or -1 with its text for byte fallback.
  std::vector<TokenId> symbols;
  std::vector<std::string_view> texts;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t len = std::max<size_t>(1, utf8_char_length(piece, pos));
    const std::string_view text = piece.substr(pos, len);
    const auto it = token_to_id_.find(text);
    symbols.push_back(it == token_to_id_.end() ? -1 : it->second);
    texts.push_back(text);
    pos += len;
  }
  merge_by_rank(symbols, &texts);
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] != -1) {
      out.push_back(symbols[i]);
      continue;
    }
    for (const char b : texts[i]) {
      if (byte_to_id_[uint8_t(b)] != -1) out.push_back(byte_to_id_[uint8_t(b)]);  // else dropped, as llama.cpp
    }
  }
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (vocab_.ignore_merges) {
    const auto it = token_to_id_.find(byte_level_encode(piece));
    if (it != token_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<TokenId> symbols;
  symbols.reserve(piece.size());
  for (const char b : piece) {
    if (byte_to_id_[uint8_t(b)] != -1) {
      symbols.push_back(byte_to_id_[uint8_t(b)]);
    } else if (never_in_utf8(uint8_t(b))) {
      // Only invalid UTF-8 has this byte, and llama.cpp reads invalid UTF-8 as U+FFFD.
      for (const char r : kReplacementCharacter) {
        if (byte_to_id_[uint8_t(r)] != -1) symbols.push_back(byte_to_id_[uint8_t(r)]);
      }
    }
    // Any other byte without a token is dropped, as llama.cpp drops it (such vocabularies lack rare control
    // characters or lead bytes of unassigned planes).
  }
  merge_by_rank(symbols, nullptr);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeTokenizer::merge_by_rank(std::vector<TokenId>& symbols, std::vector<std::string_view>* texts) const {
  // Merge the lowest-ranked adjacent pair (the leftmost on a tie) until no pair has a merge: HF's order. A heap
  // of candidate pairs over a linked list keeps a long piece (a whole line in Gemma 4) O(n log n); a popped pair
  // whose sides changed since it was pushed is stale and skipped.
  const size_t n = symbols.size();
  if (n < 2) return;
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    TokenId left_id;
    TokenId right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::vector<int32_t> next(n);
  std::vector<int32_t> prev(n);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
    prev[i] = int32_t(i) - 1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[size_t(left)] == -1 || symbols[size_t(right)] == -1) return;
    const auto it = merges_.find(pair_key(symbols[size_t(left)], symbols[size_t(right)]));
    if (it != merges_.end()) {
      queue.push(Candidate{it->second.rank, left, right, symbols[size_t(left)], symbols[size_t(right)]});
    }
  };
  for (size_t i = 0; i + 1 < n; ++i) push(int32_t(i), int32_t(i + 1));
  std::vector<bool> merged_away(n, false);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (merged_away[size_t(c.left)] || merged_away[size_t(c.right)] || next[size_t(c.left)] != c.right ||
        symbols[size_t(c.left)] != c.left_id || symbols[size_t(c.right)] != c.right_id) {
      continue;
    }
    symbols[size_t(c.left)] = merges_.at(pair_key(c.left_id, c.right_id)).merged;
    merged_away[size_t(c.right)] = true;
    if (texts != nullptr) {
      std::string_view& left = (*texts)[size_t(c.left)];
      left = std::string_view(left.data(), left.size() + (*texts)[size_t(c.right)].size());
    }
    next[size_t(c.left)] = next[size_t(c.right)];
    if (next[size_t(c.right)] != -1) prev[size_t(next[size_t(c.right)])] = c.left;
    push(prev[size_t(c.left)], c.left);
    push(c.left, next[size_t(c.left)]);
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (merged_away[i]) continue;
    symbols[kept] = symbols[i];
    if (texts != nullptr) (*texts)[kept] = (*texts)[i];
    ++kept;
  }
  symbols.resize(kept);
  if (texts != nullptr) texts->resize(kept);
}

std::string BpeTokenizer::token_bytes(TokenId token, TokenId /*prev*/) const {
  if (token < 0 || token >= vocab_size()) return "";
  switch (added_kind_[size_t(token)]) {
    case kAddedSpecial: return "";
    case kAddedText:
    case kHarmonyMarker:
      for (const AddedToken& added : vocab_.added) {
        if (added.id == token) return added.content;
      }
      return "";
    default: break;
  }
  const std::string& spelled = vocab_.tokens[size_t(token)];
  if (vocab_.byte_level) return byte_level_decode(spelled);
  if (const std::optional<uint8_t> byte = parse_byte_piece(spelled)) return std::string(1, char(*byte));
  std::string text;  // U+2581 back to spaces
  for (size_t pos = 0; pos < spelled.size();) {
    if (std::string_view(spelled).substr(pos, kUtf8SpaceMarker.size()) == kUtf8SpaceMarker) {
      text += ' ';
      pos += kUtf8SpaceMarker.size();
    } else {
      text += spelled[pos++];
    }
  }
  return text;
}

bool BpeTokenizer::ends_generation(TokenId token) const {
  if (token < 0) return false;
  return token == vocab_.eos_id ||
         std::find(vocab_.stop_ids.begin(), vocab_.stop_ids.end(), token) != vocab_.stop_ids.end();
}

bool BpeTokenizer::is_control(TokenId token) const {
  return token >= 0 && token < vocab_size() && added_kind_[size_t(token)] == kAddedSpecial;
}

}  // namespace pagoda
