#pragma once
// Prometheus' text exposition format 0.0.4: families of samples, each with its HELP and TYPE,
// names and label values escaped as the format says.

#include <string>
#include <utility>
#include <vector>

#include "observability/measurements.hpp"

namespace det::observability {

/// A sample's labels, in the order they are written.
using labels = std::vector<std::pair<std::string, std::string>>;

enum class metric_type { counter, gauge, histogram };

/// The body of a scrape, built family by family; each name is written once.
class exposition {
 public:
  /// The HTTP Content-Type of the text.
  static constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";

  /// A gauge or counter family with its samples (a family with none still says what it is).
  void family(const std::string& name, const std::string& help, metric_type type,
              const std::vector<std::pair<labels, double>>& samples);
  /// A histogram family: one histogram per label set.
  void histograms(const std::string& name, const std::string& help,
                  const std::vector<std::pair<labels, histogram::snapshot>>& members);

  std::string take() { return std::move(text_); }

 private:
  void header(const std::string& name, const std::string& help, metric_type type);
  void sample(const std::string& name, const labels& labels, double value);
  std::string text_;
};

}  // namespace det::observability
