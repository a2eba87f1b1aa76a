// The benchmarks' HTML page.
#include "bench/html_report.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/svg_chart.h"
#include "core/html_escape.h"

namespace pagoda::bench {
namespace {

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && (*end == '\0' || *end == 'x' || *end == ' ');
}

}  // namespace

void HtmlReport::add_heading(const std::string& text) { body_ += "<h2>" + html_escape(text) + "</h2>\n"; }

void HtmlReport::add_paragraph(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }

void HtmlReport::add_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<tr>";
  for (const std::string& h : header) body_ += "<th>" + html_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const std::string& c : row) body_ += (is_number(c) ? "<td class=\"n\">" : "<td>") + html_escape(c) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlReport::add_svg(const std::string& svg) { body_ += "<div class=\"fig\">" + svg + "</div>\n"; }

std::string HtmlReport::html() const {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\n<style>\n"
      "body{{font-family:sans-serif;margin:24px;color:#222}} table{{border-collapse:collapse;margin:12px 0}}\n"
      "th,td{{border:1px solid #bbb;padding:3px 8px;font-size:13px}} th{{background:#eee}} td.n{{text-align:right;"
      "font-variant-numeric:tabular-nums}}\n.fig{{display:inline-block;margin:8px 8px 8px 0;border:1px solid #ddd}}\n"
      "</style></head><body>\n<h1>{0}</h1>\n{1}</body></html>\n",
      html_escape(title_), body_);
}

Status HtmlReport::write(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::error(fmt::format("cannot create report folder {}: {}", dir, ec.message()));
  const std::string path = dir + "/index.html";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string text = html();
  out.write(text.data(), std::streamsize(text.size()));
  if (!out) return Status::error(fmt::format("cannot write {}", path));
  return Status();
}

}  // namespace pagoda::bench
