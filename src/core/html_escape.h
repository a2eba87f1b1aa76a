// html_escape: text made safe inside HTML/XML text and quoted attributes (& < > " ' as character references), the
// one escaper of the chat page, the benchmark reports' HTML/SVG and the Jinja `escape` filter. `quote` picks how
// the double quote is spelt: HTML's named &quot;, or the numeric &#34; that Python's markupsafe (and so jinja2's
// `escape`) writes, which template parity needs.
#pragma once

#include <string>
#include <string_view>

namespace pagoda {

enum class QuoteEntity { kNamed, kNumeric };

inline std::string html_escape(std::string_view text, QuoteEntity quote = QuoteEntity::kNamed) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += quote == QuoteEntity::kNamed ? "&quot;" : "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace pagoda
