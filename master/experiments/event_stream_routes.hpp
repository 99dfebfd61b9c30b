#pragma once
// GET /api/v1/stream: what changed, as it is committed, for pages that show it live (NDJSON, one
// StreamEvent a line, read with fetch so that it carries the bearer token). Scoped to one
// experiment (its trials' metric reports, its and its trials' changes), one trial (its reports,
// changes and new log lines) or, unscoped, every experiment's changes. `after` and `generation`
// resume where a dropped stream left off; a cursor from another master run, or too old to
// resume, gets a `reset`: read again over REST, then go on from its cursor.
//
// A user holds at most max_streams_per_user streams at once (each holds a connection and a
// handler's poll), and a stream ends within a poll of its token's revocation. A stream whose
// client left gives its slot back when its next write fails (a heartbeat at most 15 s later).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/local_interfaces.hpp"

namespace det::runtime {

/// How many event streams each user holds open; a slot is taken while a stream lives.
class stream_quota : public std::enable_shared_from_this<stream_quota> {
public:
  static constexpr int max_streams_per_user = 16;

  /// One of a user's streams, counted until it is destroyed.
  class slot {
  public:
    slot(std::shared_ptr<stream_quota> quota, int64_t user_id) : quota_(std::move(quota)), user_id_(user_id) {}
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() { quota_->give_back(user_id_); }

  private:
    std::shared_ptr<stream_quota> quota_;
    int64_t user_id_;
  };

  /// A slot of `user_id`'s; null while it holds them all.
  std::unique_ptr<slot> take(int64_t user_id);

private:
  void give_back(int64_t user_id);

  std::mutex mutex_;
  std::map<int64_t, int> open_;  // users with a stream open
};

struct event_stream_routes {
  caf::actor_system& sys;
  master_handles handles;
  authenticator& auth;
  route_guards& guards;
  std::shared_ptr<stream_quota> quota = std::make_shared<stream_quota>();

  void add_to(http_router& server);
};

} // namespace det::runtime
