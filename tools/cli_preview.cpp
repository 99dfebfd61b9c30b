#include "tools/cli_preview.hpp"

#include <iostream>

#include "config/experiment_config.hpp"
#include "config/yaml_config.hpp"
#include "messages/api.pb.h"
#include "messages/preview_json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

int preview_search(rest_client& master, const std::string& config_path, bool json) {
  pb::PreviewSearchRequest request;
  try {
    request.set_config(config::experiment_config_text(config_path));  // a YAML file as TOML
  } catch (const config::config_error& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  request.set_config_path(config_path);
  pb::PreviewSearchResponse plan;
  master.post("/api/v1/preview-hp-search", request, plan);
  if (json) {
    std::cout << preview_to_json(plan) << '\n';
    return 0;
  }
  std::cout << "Using search method " << plan.searcher() << "\n";
  table out({"Trials", "Training length"});
  int64_t trials = 0;
  int64_t total = 0;
  std::string unit;
  for (const auto& b : plan.trials()) {
    out.add_row({std::to_string(b.count()),
                 b.length() > 0 ? std::to_string(b.length()) + " " + b.unit() : "until its process exits"});
    trials += b.count();
    total += b.count() * b.length();
    unit = b.unit();
  }
  out.print(std::cout);
  if (total > 0)
    std::cout << "Total: " << trials << " trials, " << total << " " << unit << " of training\n";
  else
    std::cout << "Total: " << trials << " trials, each training as long as its process decides\n";
  return 0;
}

} // namespace det::tools
