// HtmlReport: the self-contained page `--report DIR` writes as DIR/index.html: a title, notes, tables and
// inline SVG figures, in the order added. No script, no external style sheet, no network: it opens from disk.
#pragma once

#include <pagoda/status.h>

#include <string>
#include <vector>

namespace pagoda::bench {

class HtmlReport {
 public:
  explicit HtmlReport(std::string title) : title_(std::move(title)) {}
  void add_heading(const std::string& text);
  void add_paragraph(const std::string& text);  // escaped
  // A table: `header` cells, then rows of cells (escaped); cells that parse as numbers are right-aligned.
  void add_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  void add_svg(const std::string& svg);  // from svg_chart.h, inserted as it is
  std::string html() const;
  // Creates DIR if needed and writes DIR/index.html. Errors name the path.
  Status write(const std::string& dir) const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace pagoda::bench
