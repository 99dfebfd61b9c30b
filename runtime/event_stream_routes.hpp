#pragma once
// GET /api/v1/stream: what changed, as it is committed, for pages that show it live (NDJSON, one
// StreamEvent a line, read with fetch so that it carries the bearer token). Scoped to one
// experiment (its trials' metric reports, its and its trials' changes), one trial (its reports,
// changes and new log lines) or, unscoped, every experiment's changes. `after` and `generation`
// resume where a dropped stream left off; a cursor from another master run, or too old to
// resume, gets a `reset`: read again over REST, then go on from its cursor.

#include <functional>

#include "runtime/http_types.hpp"

#include "runtime/account_routes.hpp"

namespace det::runtime {

struct event_stream_routes {
  caf::actor_system& sys;
  master_handles handles;
  std::function<http_handler(signed_in_handler)> signed_in;

  void add_to(http_router& server);
};

} // namespace det::runtime
