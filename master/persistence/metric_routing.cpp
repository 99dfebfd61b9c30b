#include "master/persistence/metric_routing.hpp"

#include <algorithm>
#include <stdexcept>

namespace det {

metric_routing::metric_routing(std::size_t writers) : uncommitted_(writers, 0) {
  if (writers == 0) throw std::invalid_argument("metric routing needs at least one writer");
}

std::optional<std::size_t> metric_routing::writer_for(const std::vector<int64_t>& trials) const {
  std::optional<std::size_t> bound;
  for (auto trial : trials) {
    auto it = routes_.find(trial);
    if (it == routes_.end()) continue;
    if (bound && *bound != it->second.writer) return std::nullopt;
    bound = it->second.writer;
  }
  if (bound) return bound;
  return static_cast<std::size_t>(std::min_element(uncommitted_.begin(), uncommitted_.end()) - uncommitted_.begin());
}

void metric_routing::appended(std::size_t writer, const std::vector<int64_t>& trials, std::size_t reports) {
  uncommitted_.at(writer) += reports;
  for (auto trial : trials) {
    auto [it, fresh] = routes_.try_emplace(trial, route{writer, 0});
    if (!fresh && it->second.writer != writer)
      throw std::logic_error("trial " + std::to_string(trial) + " has uncommitted metrics on another writer");
    ++it->second.batches;
  }
}

void metric_routing::settled(std::size_t writer, const std::vector<int64_t>& trials, std::size_t reports) {
  uncommitted_.at(writer) -= std::min(reports, uncommitted_.at(writer));
  for (auto trial : trials) {
    auto it = routes_.find(trial);
    if (it == routes_.end() || it->second.writer != writer) continue;
    if (--it->second.batches == 0) routes_.erase(it);
  }
}

}  // namespace det
