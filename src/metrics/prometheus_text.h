// PrometheusText: builds one scrape in the Prometheus text exposition format (version 0.0.4): each metric
// family gets its # HELP and # TYPE lines once, then its samples with their labels. Knows nothing of what the
// metrics mean; label values are escaped here.
#pragma once

#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include "metrics/histogram.h"

namespace pagoda::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  void counter(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  void gauge(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  // Emits name_bucket{le=...} (cumulative), name_sum and name_count.
  void histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h, const Labels& labels = {});
  // A family's header without a sample (for a labelled family whose samples follow with sample()).
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, double value, const Labels& labels = {});

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// One scrape of several: the samples of a family that several texts hold, each under its # HELP and # TYPE lines
// once, in the order the families first appear (each text's samples differ by a label, e.g. model_name).
std::string merge_prometheus_texts(const std::vector<std::string>& texts);
// "a\"b" style escaping of a label value (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);
// Numbers as Prometheus writes them: integers without a fraction, +Inf/-Inf/NaN by name.
std::string format_value(double value);

}  // namespace pagoda::metrics
