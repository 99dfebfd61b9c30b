#pragma once
// The plan of a search without training it (Determined's Simulate, behind
// `det preview-search`): how many trials stop at which length.

#include <cstdint>
#include <vector>

#include "config/experiment_config.hpp"

namespace det::searcher {

struct preview_bucket {
  int64_t count = 0;   // trials that stop at this length
  int64_t length = 0;  // 0: each trains until its process exits (a search without a length)
  config::length_unit unit = config::length_unit::batches;
};

/// Buckets sorted by length, one per distinct length. Throws config::config_error
/// for a searcher that cannot be planned ahead.
std::vector<preview_bucket> preview(const config::experiment_config& config);

} // namespace det::searcher
