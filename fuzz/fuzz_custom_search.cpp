// The custom searcher's state machine (searcher/custom_search.cpp) driven by what its process
// posts and what its trials do. Each line of the input is one step: "p" and a JSON
// PostSearcherOperationsRequest (as the gateway reads it), "c N" trial N created, "v N M L" a
// validation of trial N (metric M, length L), "e N R" trial N exited early (reason R), "x N"
// trial N exited, "s" a snapshot restored into a fresh searcher, which must hold the same state.
#include "config/experiment_config.hpp"
#include "messages/json.hpp"
#include "messages/searcher.pb.h"
#include "searcher/searcher.hpp"

#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

const det::config::experiment_config& custom_config() {
  static const auto config = det::config::parse_experiment_config(
      "entrypoint = \"builtin:simulate\"\n[searcher]\nname = \"custom\"\nmetric = \"loss\"\n", "fuzz.toml");
  return config;
}

std::unique_ptr<det::searcher::searcher> fresh() {
  return std::make_unique<det::searcher::searcher>(det::searcher::make_search_method(custom_config()));
}

// Compared as messages: maps serialize in no fixed order.
bool same_state(const det::searcher::searcher& a, const det::searcher::searcher& b) {
  auto left = a.snapshot();
  auto right = b.snapshot();
  if (google::protobuf::util::MessageDifferencer::Equals(left, right)) return true;
  std::fprintf(stderr, "restored searcher differs:\n%s\n---\n%s\n", left.DebugString().c_str(),
               right.DebugString().c_str());
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto search = fresh();
  search->initial_trials();
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  std::string line;
  for (int steps = 0; std::getline(lines, line) && steps < 64; ++steps) {
    if (line.empty()) continue;
    std::istringstream words(line.substr(1));
    int64_t id = 0;
    switch (line[0]) {
      case 'p': {
        det::pb::PostSearcherOperationsRequest request;
        std::string error;
        if (!det::from_json(line.substr(1), request, error)) break;
        try {
          search->operations_posted(request);
        } catch (const std::invalid_argument&) {
        }
        break;
      }
      case 'c':
        if (words >> id) search->trial_created(id);
        break;
      case 'v': {
        double metric = 0;
        int64_t length = 0;
        if (words >> id >> metric >> length) search->validation_completed(id, metric, length);
        break;
      }
      case 'e': {
        int reason = 0;
        if (words >> id >> reason)
          search->trial_exited_early(id, static_cast<det::searcher::exit_reason>(((reason % 3) + 3) % 3));
        break;
      }
      case 'x':
        if (words >> id) search->trial_exited(id);
        break;
      case 's': {
        auto restored = fresh();
        restored->restore(search->snapshot());
        if (!same_state(*search, *restored)) __builtin_trap();  // a restore must continue exactly
        search = std::move(restored);
        break;
      }
      default:
        break;
    }
  }
  return 0;
}
