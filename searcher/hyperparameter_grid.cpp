#include "searcher/hyperparameter_grid.hpp"

#include "config/config_error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace det::searcher {

namespace {

/// The values of one leaf hyperparameter, and where it sits in the nested JSON object.
struct axis {
  nlohmann::json::json_pointer path;
  std::vector<nlohmann::json> values;
};

int64_t count_of(const config::hyperparameter& hp, const std::string& name) {
  if (!hp.count)
    throw config::config_error("hyperparameters." + name +
                               ": the grid searcher needs count, the number of grid points, on every "
                               "int, double and log hyperparameter");
  return *hp.count;
}

std::vector<nlohmann::json> axis_values(const config::hyperparameter& hp, const std::string& name) {
  using config::hyperparameter_type;
  std::vector<nlohmann::json> values;
  switch (hp.type) {
    case hyperparameter_type::constant:
      values.push_back(nlohmann::json::parse(hp.value_json));
      break;
    case hyperparameter_type::categorical:
      for (const auto& val : hp.vals_json) values.push_back(nlohmann::json::parse(val));
      break;
    case hyperparameter_type::int_range: {
      auto lo = std::llround(hp.minval), hi = std::llround(hp.maxval);
      auto count = std::min<int64_t>(count_of(hp, name), hi - lo + 1);
      if (count == 1) {
        values.push_back(static_cast<int64_t>(std::llround(static_cast<double>(lo + hi) / 2.0)));
        break;
      }
      for (int64_t i = 0; i < count; ++i)
        values.push_back(static_cast<int64_t>(std::llround(  // in doubles: i * (hi - lo) may pass int64
            static_cast<double>(lo) + static_cast<double>(i) * static_cast<double>(hi - lo) / static_cast<double>(count - 1))));
      break;
    }
    case hyperparameter_type::double_range:
    case hyperparameter_type::log_range: {
      auto count = count_of(hp, name);
      std::vector<double> points;
      if (count == 1) points.push_back((hp.minval + hp.maxval) / 2.0);
      for (int64_t i = 0; count > 1 && i < count; ++i)
        points.push_back(hp.minval + static_cast<double>(i) * (hp.maxval - hp.minval) / static_cast<double>(count - 1));
      for (auto point : points)
        values.push_back(hp.type == hyperparameter_type::log_range ? std::pow(hp.base, point) : point);
      break;
    }
    case hyperparameter_type::nested:
      break;  // flatten() gives each entry its own axis
  }
  return values;
}

void flatten(const config::hyperparameters& hparams, const nlohmann::json::json_pointer& parent,
             const std::string& parent_name, std::vector<axis>& axes) {
  for (const auto& [name, hp] : hparams) {
    auto path = parent / name;
    auto dotted = parent_name.empty() ? name : parent_name + "." + name;
    if (hp.type != config::hyperparameter_type::nested)
      axes.push_back(axis{path, axis_values(hp, dotted)});
    else if (hp.nested.empty())
      axes.push_back(axis{path, {nlohmann::json::object()}});
    else
      flatten(hp.nested, path, dotted, axes);
  }
}

/// How many values an axis has, without making them: a count is the user's number, and a grid
/// of two axes of 4 billion points each once filled the master's memory as it was built.
int64_t axis_size(const config::hyperparameter& hp, const std::string& name) {
  using config::hyperparameter_type;
  switch (hp.type) {
    case hyperparameter_type::constant:
      return 1;
    case hyperparameter_type::categorical:
      return static_cast<int64_t>(hp.vals_json.size());
    case hyperparameter_type::int_range: {
      const double integers = std::floor(static_cast<double>(std::llround(hp.maxval)) -
                                         static_cast<double>(std::llround(hp.minval))) + 1.0;
      return std::min<int64_t>(count_of(hp, name), integers >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(integers));
    }
    case hyperparameter_type::double_range:
    case hyperparameter_type::log_range:
      return count_of(hp, name);
    case hyperparameter_type::nested:
      break;
  }
  return 1;
}

/// The product of the axes' sizes, saturating at INT64_MAX.
int64_t grid_size(const config::hyperparameters& hparams, const std::string& parent_name) {
  int64_t size = 1;
  for (const auto& [name, hp] : hparams) {
    auto dotted = parent_name.empty() ? name : parent_name + "." + name;
    int64_t factor = hp.type != config::hyperparameter_type::nested ? axis_size(hp, dotted)
                     : hp.nested.empty()                              ? 1
                                                                      : grid_size(hp.nested, dotted);
    if (factor == 0) return 0;
    size = size > INT64_MAX / factor ? INT64_MAX : size * factor;
  }
  return size;
}

std::vector<axis> axes_of(const config::hyperparameters& hparams) {
  std::vector<axis> axes;
  flatten(hparams, nlohmann::json::json_pointer{}, "", axes);
  return axes;
}

} // namespace

std::optional<std::string> grid_too_large(const config::hyperparameters& hparams, int64_t max_points,
                                          const std::string& whose_limit) {
  const auto size = hyperparameter_grid_size(hparams);
  if (size <= max_points) return std::nullopt;
  return "hyperparameters: the grid has " + (size == INT64_MAX ? std::string("more than 9.2e18") : std::to_string(size)) +
         " points, one trial each; " + whose_limit + " at most " + std::to_string(max_points) +
         " trials: lower the counts";
}

std::vector<std::string> hyperparameter_grid(const config::hyperparameters& hparams, int64_t max_points) {
  if (auto refusal = grid_too_large(hparams, max_points, "det builds grids of")) throw config::config_error(*refusal);
  auto axes = axes_of(hparams);
  std::vector<std::string> points;
  if (std::any_of(axes.begin(), axes.end(), [](const axis& a) { return a.values.empty(); })) return points;
  // An odometer over the axes, the last one turning fastest.
  std::vector<size_t> digits(axes.size(), 0);
  for (;;) {
    auto point = nlohmann::json::object();
    for (size_t i = 0; i < axes.size(); ++i) point[axes[i].path] = axes[i].values[digits[i]];
    points.push_back(point.dump());
    size_t turning = axes.size();
    while (turning > 0 && ++digits[turning - 1] == axes[turning - 1].values.size()) digits[--turning] = 0;
    if (turning == 0) return points;
  }
}

int64_t hyperparameter_grid_size(const config::hyperparameters& hparams) {
  return grid_size(hparams, "");
}

} // namespace det::searcher
