#include "actors/admission.hpp"

#include <chrono>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "caf/deep_to_string.hpp"

namespace det {
namespace {

struct admitted {
  std::shared_mutex mutex;
  std::unordered_set<caf::node_id> nodes;
  std::mutex log_mutex;
  std::chrono::steady_clock::time_point last_note;
};

admitted& registry() {
  static admitted instance;
  return instance;
}

} // namespace

void admit_node(const caf::node_id& node) {
  auto& r = registry();
  std::unique_lock<std::shared_mutex> lock{r.mutex};
  r.nodes.insert(node);
}

bool node_admitted(const caf::node_id& node) {
  auto& r = registry();
  std::shared_lock<std::shared_mutex> lock{r.mutex};
  return r.nodes.count(node) > 0;
}

void note_dropped(const caf::node_id& node, const char* actor_name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock{r.log_mutex};
  auto now = std::chrono::steady_clock::now();
  if (now - r.last_note < std::chrono::seconds(1))
    return;
  r.last_note = now;
  std::cerr << "master: dropped a message to the " << actor_name << " actor from "
            << (node ? "node " + caf::to_string(node) : std::string{"a sender it cannot name"})
            << ", which is not an admitted agent or worker" << std::endl;
}

} // namespace det
