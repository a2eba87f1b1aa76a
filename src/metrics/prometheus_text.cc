// PrometheusText: the exposition format's lines.
#include "metrics/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>

namespace pagoda::metrics {
namespace {

std::string label_block(const Labels& labels, std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ',';
    first = false;
    s += fmt::format("{}=\"{}\"", k, escape_label_value(v));
  }
  if (!extra_name.empty()) {
    if (!first) s += ',';
    s += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  s += '}';
  return s;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string s;
  s.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      s += "\\\\";
    } else if (c == '"') {
      s += "\\\"";
    } else if (c == '\n') {
      s += "\\n";
    } else {
      s += c;
    }
  }
  return s;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{}", value);
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusText::sample(std::string_view name, double value, const Labels& labels) {
  out_ += fmt::format("{}{} {}\n", name, label_block(labels), format_value(value));
}

void PrometheusText::counter(std::string_view name, std::string_view help, double value, const Labels& labels) {
  family(name, "counter", help);
  sample(name, value, labels);
}

void PrometheusText::gauge(std::string_view name, std::string_view help, double value, const Labels& labels) {
  family(name, "gauge", help);
  sample(name, value, labels);
}

void PrometheusText::histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h,
                               const Labels& labels) {
  family(name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bucket_counts.size(); ++i) {
    cumulative += h.bucket_counts[i];
    const std::string le = i < h.upper_bounds.size() ? format_value(h.upper_bounds[i]) : "+Inf";
    out_ += fmt::format("{}_bucket{} {}\n", name, label_block(labels, "le", le), cumulative);
  }
  out_ += fmt::format("{}_sum{} {}\n", name, label_block(labels), format_value(h.sum));
  out_ += fmt::format("{}_count{} {}\n", name, label_block(labels), h.count);
}

std::string merge_prometheus_texts(const std::vector<std::string>& texts) {
  // A family is the lines from its "# HELP" to the next one.
  std::vector<std::string> order;
  std::map<std::string, std::string, std::less<>> families;  // name -> its header and samples
  for (const std::string& text : texts) {
    std::string current;
    size_t begin = 0;
    while (begin < text.size()) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      const std::string_view line(text.data() + begin, end - begin);
      begin = end + 1;
      if (line.starts_with("# HELP ")) {
        const std::string_view rest = line.substr(7);
        current = std::string(rest.substr(0, rest.find(' ')));
        if (families.emplace(current, std::string(line) + "\n").second) {
          order.push_back(current);
          continue;
        }
        current = "\n" + current;  // a family seen before: its header is not repeated
        continue;
      }
      if (line.starts_with("# TYPE ") && current.starts_with('\n')) continue;
      const std::string name = current.starts_with('\n') ? current.substr(1) : current;
      if (!families.contains(name)) {
        order.push_back(name);
        families.emplace(name, std::string());
      }
      families[name].append(line).append("\n");
    }
  }
  std::string out;
  for (const std::string& name : order) out += families[name];
  return out;
}

}  // namespace pagoda::metrics
