#include "config/section_readers.hpp"

#include <limits>
#include <sstream>

namespace det::config::detail {

namespace {

std::string format_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

hyperparameter read_hyperparameter(const toml::node& node, const std::string& path, diagnostics& diag,
                                   bool counts_required);

void read_range(table_reader& reader, hyperparameter& hp, bool counts_required) {
  std::optional<double> minval, maxval;
  if (hp.type == hyperparameter_type::int_range) {
    // Bounds are kept as doubles, which hold every integer up to 2^53 exactly.
    constexpr int64_t exact = int64_t{1} << 53;
    if (auto v = reader.read_integer_in("minval", -exact, exact)) minval = static_cast<double>(*v);
    if (auto v = reader.read_integer_in("maxval", -exact, exact)) maxval = static_cast<double>(*v);
  } else {
    minval = reader.read_number("minval");
    maxval = reader.read_number("maxval");
  }
  if (!reader.source_table().contains("minval")) reader.missing("minval");
  if (!reader.source_table().contains("maxval")) reader.missing("maxval");
  if (minval && maxval) {
    if (*minval >= *maxval)
      reader.error_here("minval must be less than maxval, got minval = " + format_number(*minval) +
                        " and maxval = " + format_number(*maxval));
    hp.minval = *minval;
    hp.maxval = *maxval;
  }
  hp.count = reader.read_integer_in("count", 1, std::numeric_limits<int64_t>::max());
  if (counts_required && !reader.source_table().contains("count"))
    reader.error_here("the grid searcher needs count, the number of grid points, on every int, "
                      "double and log hyperparameter");
  if (hp.type == hyperparameter_type::log_range) {
    if (auto base = reader.read_number("base")) {
      if (*base <= 0)
        reader.error("base", "must be positive, got " + format_number(*base));
      else
        hp.base = *base;
    }
  }
}

hyperparameter read_typed(const toml::table& table, const std::string& path, diagnostics& diag,
                          bool counts_required) {
  table_reader reader(table, path, diag);
  hyperparameter hp;
  auto type = reader.read_string("type");
  if (!type) return hp;  // wrong type of `type` already reported; other keys mean nothing without it
  if (*type == "const") {
    hp.type = hyperparameter_type::constant;
    if (const auto* val = reader.read_node("val"))
      hp.value_json = to_json_text(*val);
    else
      reader.missing("val");
  } else if (*type == "int" || *type == "double" || *type == "log") {
    hp.type = *type == "int"      ? hyperparameter_type::int_range
              : *type == "double" ? hyperparameter_type::double_range
                                  : hyperparameter_type::log_range;
    read_range(reader, hp, counts_required);
  } else if (*type == "categorical") {
    hp.type = hyperparameter_type::categorical;
    if (const auto* vals = reader.read_array("vals")) {
      if (vals->empty()) reader.error("vals", "must list at least one value");
      for (const auto& val : *vals) hp.vals_json.push_back(to_json_text(val));
    } else if (!table.contains("vals")) {
      reader.missing("vals");
    }
  } else {
    reader.error("type", "unknown hyperparameter type \"" + *type +
                             "\"; expected const, int, double, log or categorical");
    return hp;
  }
  reader.report_unknown_keys();
  return hp;
}

hyperparameter read_hyperparameter(const toml::node& node, const std::string& path, diagnostics& diag,
                                   bool counts_required) {
  const auto* table = node.as_table();
  if (!table) {
    // A bare value is shorthand for a constant.
    hyperparameter hp;
    hp.value_json = to_json_text(node);
    return hp;
  }
  if (table->contains("type")) return read_typed(*table, path, diag, counts_required);
  hyperparameter hp;
  hp.type = hyperparameter_type::nested;
  for (auto&& [key, child] : *table) {
    auto name = std::string(key.str());
    hp.nested.emplace(name, read_hyperparameter(child, path + "." + name, diag, counts_required));
  }
  return hp;
}

} // namespace

hyperparameters read_hyperparameters(table_reader& root, bool counts_required) {
  hyperparameters result;
  const auto* table = root.read_table("hyperparameters");
  if (!table) return result;
  for (auto&& [key, node] : *table) {
    auto name = std::string(key.str());
    result.emplace(name, read_hyperparameter(node, root.path_of("hyperparameters") + "." + name,
                                             root.diag(), counts_required));
  }
  return result;
}

} // namespace det::config::detail
