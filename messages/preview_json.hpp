#pragma once
// The preview-search reply as Determined's clients read it: counts and
// lengths as JSON numbers (the proto3 mapping would print int64 as strings).

#include <string>

#include <nlohmann/json.hpp>

#include "messages/api.pb.h"

namespace det {

inline std::string preview_to_json(const pb::PreviewSearchResponse& plan) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& b : plan.trials())
    trials.push_back({{"count", b.count()}, {"length", b.length()}, {"unit", b.unit()}});
  return nlohmann::json{{"searcher", plan.searcher()}, {"trials", trials}}.dump();
}

} // namespace det
