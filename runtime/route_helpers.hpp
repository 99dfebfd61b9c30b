#pragma once
// What the route files of the gateway share: a request's JSON body as a message, and the waits on
// actors left to paths that answer synchronously (a stream's first check, the Prometheus scrape);
// routes ask with ask_deferred (actor_ask.hpp) or as coroutines (route_coroutine.hpp).

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/http_types.hpp"

#include "actors/local_interfaces.hpp"
#include "caf/scoped_actor.hpp"
#include "messages/json.hpp"
#include "runtime/actor_ask.hpp"
#include "runtime/http_replies.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

/// Why `name` cannot name a `what` (a workspace, project or model: it goes into paths), as a
/// sentence, or "".
inline std::string bad_name_reason(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > 255)
    return "a " + what + " name has 1 to 255 characters";
  if (name.find('/') != std::string::npos)
    return "a " + what + " name may not contain '/', as \"" + name + "\" does";
  return "";
}

/// The request's body as a `Body` ("" reads as {}); nullopt with a 400 naming the problem.
template <class Body>
std::optional<Body> body_of(const http_request& req, http_response& res) {
  Body body;
  std::string error;
  if (from_json(req.body.empty() ? "{}" : req.body, body, error))
    return body;
  reply_error(res, errc::invalid_input, error);
  return std::nullopt;
}

/// Asks every pool of `handles` for its state and jobs; `failure` keeps the last error.
inline std::vector<std::pair<pb::ResourcePoolInfo, pb::GetJobsResponse>> pool_states(caf::actor_system& sys,
                                                                                    const master_handles& handles,
                                                                                    caf::error& failure) {
  std::vector<std::pair<pb::ResourcePoolInfo, pb::GetJobsResponse>> states;
  caf::scoped_actor self{sys};
  for (const auto& [name, pool] : handles.pools)
    self->request(pool, route_timeout, list_atom::value)
        .receive(
            [&](pb::ResourcePoolInfo& info, pb::GetJobsResponse& jobs) {
              info.set_default_compute_pool(name == handles.default_pool);
              info.set_default_aux_pool(name == handles.default_aux_pool);
              states.emplace_back(std::move(info), std::move(jobs));
            },
            [&](caf::error& e) { failure = std::move(e); });
  return states;
}

/// Whether the reader finds experiment or trial `id`: true, or false with the reply made (404
/// naming it, or the reader's error).
template <class Id>
bool exists_or_reply(caf::actor_system& sys, http_response& res, const persistence_reader_actor& reader, Id id) {
  constexpr bool experiment = std::is_same_v<Id, experiment_id>;
  using Reply = std::conditional_t<experiment, pb::GetExperimentResponse, pb::GetTrialResponse>;
  bool answered = false, found = false;  // not answered: the reader's error is the reply
  caf::scoped_actor self{sys};
  self->request(reader, route_timeout, get_atom::value, id)
      .receive(
          [&](Reply& r) {
            answered = true;
            if constexpr (experiment) found = r.experiment().id() != 0;
            else found = r.trial().id() != 0;
          },
          [&](caf::error& e) { reply_error(res, sys, e); });
  if (answered && !found)
    reply_error(res, errc::not_found, std::string(experiment ? "experiment " : "trial ") + std::to_string(id.value) + " not found");
  return found;
}

} // namespace det::runtime
