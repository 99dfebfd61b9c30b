#pragma once
// The REST API (Determined's /api/v1 paths, JSON printed from the protobuf
// messages). Each request is answered by asking the master's actors.

#include <memory>
#include <string>

#include "actors/local_interfaces.hpp"

namespace det::runtime {

class http_gateway {
public:
  http_gateway(caf::actor_system& sys, master_handles handles, master_front_actor front,
               int actor_port);
  ~http_gateway();

  /// Binds and serves on a thread of its own; returns the bound port (useful
  /// with port 0). Throws std::runtime_error with a sentence if it cannot bind.
  int start(const std::string& address, int port);
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace det::runtime
