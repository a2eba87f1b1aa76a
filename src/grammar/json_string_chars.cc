// json_string_chars / json_string_any_char (json_string_chars.h).
#include "grammar/json_string_chars.h"

#include <fmt/format.h>

namespace pagoda::grammar {

GrammarBuilder::Expr json_string_chars(GrammarBuilder& b, const CodePointSet& set) {
  CodePointSet raw = set;
  raw.remove(0, 0x1F);
  raw.remove('"', '"');
  raw.remove('\\', '\\');
  std::vector<GrammarBuilder::Expr> alts;
  if (!raw.empty()) alts.push_back(b.code_points(raw));
  for (uint32_t cp : {uint32_t('"'), uint32_t('\\')}) {
    if (set.contains(cp)) alts.push_back(b.literal(std::string("\\") + char(cp)));
  }
  for (uint32_t cp = 0; cp < 0x20; ++cp) {
    if (!set.contains(cp)) continue;
    switch (cp) {
      case '\b': alts.push_back(b.literal("\\b")); break;
      case '\f': alts.push_back(b.literal("\\f")); break;
      case '\n': alts.push_back(b.literal("\\n")); break;
      case '\r': alts.push_back(b.literal("\\r")); break;
      case '\t': alts.push_back(b.literal("\\t")); break;
      default: alts.push_back(b.literal(fmt::format("\\u{:04x}", cp)));
    }
  }
  return b.choice(std::move(alts));
}

GrammarBuilder::Expr json_string_any_char(GrammarBuilder& b) {
  CodePointSet raw = CodePointSet::all();
  raw.remove(0, 0x1F);
  raw.remove('"', '"');
  raw.remove('\\', '\\');
  std::bitset<256> hex, hex_no_d, hi_surrogate_2, lo_surrogate_2, low3;
  for (const char c : std::string("0123456789abcdefABCDEF")) hex.set(uint8_t(c));
  hex_no_d = hex;
  hex_no_d.reset('d');
  hex_no_d.reset('D');
  for (const char c : std::string("89abAB")) hi_surrogate_2.set(uint8_t(c));
  for (const char c : std::string("cdefCDEF")) lo_surrogate_2.set(uint8_t(c));
  for (const char c : std::string("01234567")) low3.set(uint8_t(c));
  const auto h = [&] { return b.byte_set(hex); };
  // \uXXXX outside D800-DFFF: first digit not D, or D followed by 0-7.
  const auto non_surrogate =
      b.choice({b.sequence({b.byte_set(hex_no_d), h(), h(), h()}),
                b.sequence({b.byte_set(std::bitset<256>().set('d').set('D')), b.byte_set(low3), h(), h()})});
  const auto d = b.byte_set(std::bitset<256>().set('d').set('D'));
  const auto pair =
      b.sequence({d, b.byte_set(hi_surrogate_2), h(), h(), b.literal("\\u"),
                  b.byte_set(std::bitset<256>().set('d').set('D')), b.byte_set(lo_surrogate_2), h(), h()});
  std::bitset<256> short_escapes;
  for (const char c : std::string("\"\\/bfnrt")) short_escapes.set(uint8_t(c));
  return b.choice(
      {b.code_points(raw),
       b.sequence({b.literal("\\"), b.choice({b.byte_set(short_escapes),
                                              b.sequence({b.literal("u"), b.choice({non_surrogate, pair})})})})});
}

}  // namespace pagoda::grammar
