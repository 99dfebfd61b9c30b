#pragma once
// The REST routes of experiments, after Determined's /api/v1/experiments: anyone logged in
// submits one (a new config, a fork of a parent, or `det trial continue`'s continuation), previews
// a search and reads them; their owner or an admin kills, pauses, activates, changes, labels,
// archives, moves and deletes them. The rules they apply are experiment_rules.hpp's.

#include <cstdint>
#include <optional>

#include "master/http/http_types.hpp"

#include "master/http/route_coroutine.hpp"
#include "master/http/route_guards.hpp"
#include "master/experiments/experiments_protocol.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

struct experiment_routes {
  caf::actor_system& sys;
  const master_handles& handles;
  master_front_actor front;
  route_guards& guards;

  void add_to(http_router& server);

 private:
  /// POST /api/v1/experiments: a new experiment, or a fork of parent_id.
  route_coroutine create(pb::CreateExperimentRequest body, principal who, reply_to out);
  /// det trial continue: a new experiment that resumes the trial from its latest checkpoint.
  route_coroutine continue_trial(int64_t id, pb::ContinueTrialRequest body, principal who, reply_to out);
  /// kill, pause, activate or new scheduling settings (`msg`): sent to the live experiment; an
  /// experiment that already ended answers {} for kill and 400 for the others.
  template <class... Msg>
  route_coroutine signal(int64_t id, const char* verb, reply_to out, Msg... msg);
  /// PATCH /api/v1/experiments/N: its name, description and notes stored, then its new
  /// scheduling settings sent to it.
  route_coroutine patch(int64_t id, std::optional<pb::PatchExperimentRequest> annotation,
                        std::optional<pb::JobSettings> change, reply_to out);
  /// det experiment move: into a project that takes experiments from `who`.
  route_coroutine move(int64_t id, int64_t to, principal who, reply_to out);
  /// archive or unarchive, for an ended experiment only.
  void archive(int64_t id, bool archived, http_response& res);
};

} // namespace det::runtime
