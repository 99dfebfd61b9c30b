#pragma once
// Exits of the agent's containers that the master has not heard of: they happened while the agent
// had no master. The agent's hello carries those there are when it is built; an exit that comes
// while the hello waits for its welcome was not in it, and is sent once the master has welcomed
// the agent. (Cleared wholesale at the welcome, such an exit was lost: its run's allocation
// waited for ever for a container the hello had listed as running.)

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "messages/cluster.pb.h"

namespace det::agent {

class unreported_exits {
 public:
  void add(pb::ContainerExited exited) { exits_.push_back(std::move(exited)); }

  // Puts every exit there is into `hello`; returns how many, for welcomed().
  std::size_t carry(pb::AgentHello& hello) const {
    for (const auto& exited : exits_) *hello.add_exited() = exited;
    return exits_.size();
  }

  // The master welcomed a hello that carried the first `carried`: the others, in the order they
  // came, are the agent's to send now.
  std::vector<pb::ContainerExited> welcomed(std::size_t carried) {
    exits_.erase(exits_.begin(), exits_.begin() + static_cast<std::ptrdiff_t>(std::min(carried, exits_.size())));
    return std::exchange(exits_, {});
  }

 private:
  std::vector<pb::ContainerExited> exits_;
};

} // namespace det::agent
