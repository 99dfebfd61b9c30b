#include "observability/prometheus_text.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace det::observability {

namespace {

const char* type_name(metric_type t) {
  switch (t) {
    case metric_type::counter: return "counter";
    case metric_type::gauge: return "gauge";
    case metric_type::histogram: return "histogram";
  }
  return "untyped";
}

// HELP escapes backslash and newline; label values also the double quote.
std::string escaped(const std::string& text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (quote && c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

// Go's ParseFloat reads what this writes: integers without a point, +Inf, -Inf, NaN, and
// otherwise the shortest %g that reads back the same double.
std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

}  // namespace

void exposition::header(const std::string& name, const std::string& help, metric_type type) {
  text_ += "# HELP " + name + " " + escaped(help, false) + "\n# TYPE " + name + " " + type_name(type) + "\n";
}

void exposition::sample(const std::string& name, const labels& labels, double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i)
      text_ += (i ? "," : "") + labels[i].first + "=\"" + escaped(labels[i].second, true) + "\"";
    text_ += '}';
  }
  text_ += " " + number(value) + "\n";
}

void exposition::family(const std::string& name, const std::string& help, metric_type type,
                        const std::vector<std::pair<labels, double>>& samples) {
  header(name, help, type);
  for (const auto& [labels, value] : samples) sample(name, labels, value);
}

void exposition::histograms(const std::string& name, const std::string& help,
                            const std::vector<std::pair<labels, histogram::snapshot>>& members) {
  header(name, help, metric_type::histogram);
  for (const auto& [member_labels, h] : members) {
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      auto with_le = member_labels;
      with_le.emplace_back("le", number(h.upper_bounds[i]));
      sample(name + "_bucket", with_le, static_cast<double>(h.cumulative[i]));
    }
    auto with_inf = member_labels;
    with_inf.emplace_back("le", "+Inf");
    sample(name + "_bucket", with_inf, static_cast<double>(h.count));
    sample(name + "_sum", member_labels, h.sum);
    sample(name + "_count", member_labels, static_cast<double>(h.count));
  }
}

}  // namespace det::observability
