#include "config/hyperparameter.hpp"

namespace det::config {

std::string to_string(hyperparameter_type type) {
  switch (type) {
    case hyperparameter_type::constant: return "const";
    case hyperparameter_type::int_range: return "int";
    case hyperparameter_type::double_range: return "double";
    case hyperparameter_type::log_range: return "log";
    case hyperparameter_type::categorical: return "categorical";
    case hyperparameter_type::nested: return "nested";
  }
  return "const";
}

} // namespace det::config
