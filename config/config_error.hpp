#pragma once

#include <stdexcept>

namespace det::config {

/// Thrown for every bad configuration input. `what()` holds one or more lines, each
/// "FILE:LINE:COLUMN: key.path: sentence", sorted by position, so a user sees every problem at once.
struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace det::config
