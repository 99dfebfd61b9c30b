#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace det::config {

/// Determined's hyperparameter kinds (`const`, `int`, `double`, `log`, `categorical`), plus
/// `nested`: a table without `type`, whose entries are hyperparameters themselves.
enum class hyperparameter_type { constant, int_range, double_range, log_range, categorical, nested };

/// Determined's name of the type ("const", "int", "double", "log", "categorical", "nested").
std::string to_string(hyperparameter_type type);

/// One hyperparameter as written in `[hyperparameters]` (determined-reference §2.7). Values are
/// kept as JSON text so this header stays free of a JSON library.
struct hyperparameter {
  hyperparameter_type type = hyperparameter_type::constant;
  /// const: the value, any TOML value converted to JSON.
  std::string value_json = "null";
  /// int, double: the inclusive range; log: the range of the exponent. Integral for int.
  double minval = 0;
  double maxval = 0;
  /// log: the base raised to a uniform exponent.
  double base = 10;
  /// int, double, log: the number of grid points (only the grid searcher uses it).
  std::optional<int64_t> count;
  /// categorical: every choice, each as JSON text.
  std::vector<std::string> vals_json;
  /// nested: the sub-hyperparameters by name.
  std::map<std::string, hyperparameter> nested;
};

/// Hyperparameters by name. The map's order is Determined's order: searchers visit names sorted.
using hyperparameters = std::map<std::string, hyperparameter>;

} // namespace det::config
