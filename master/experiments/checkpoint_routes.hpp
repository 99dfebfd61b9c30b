#pragma once
// The REST routes of checkpoints, after Determined's /api/v1/checkpoints: anyone logged in lists
// an experiment's or a trial's, reads one and downloads its files (streamed from the checkpoint
// storage, never through a link a trial left there); its experiment's owner or an admin deletes one.

#include <string>

#include "master/http/http_types.hpp"

#include "master/http/route_coroutine.hpp"
#include "master/http/route_guards.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

struct checkpoint_routes {
  caf::actor_system& sys;
  const master_handles& handles;
  route_guards& guards;

  void add_to(http_router& server);

 private:
  /// Deletes a checkpoint's files for its experiment's owner or an admin.
  route_coroutine remove(std::string uuid, principal who, reply_to out);
};

} // namespace det::runtime
