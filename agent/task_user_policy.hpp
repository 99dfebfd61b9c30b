#pragma once
// Whom an agent runs a det user's work as (its --run-tasks-as): the Unix user the master names
// for the run's owner (StartContainer.task_user), which only a root agent can switch to, or the
// agent's own user for everyone's work, which keeps no user from another and so only an admin's
// explicit choice may ask for.

#include <optional>
#include <string>
#include <variant>

#include "messages/cluster.pb.h"
#include "process/unix_identity.hpp"

namespace det::runtime {

enum class task_user_policy {
  owner,       ///< each run as its owner's Unix user (the default)
  agent_user,  ///< every run as the agent's own user: no isolation between det users
};

/// "owner" or "agent-user", as --run-tasks-as takes them.
std::string to_string(task_user_policy policy);
std::optional<task_user_policy> task_user_policy_from(const std::string& word);

/// Who a run starts as on an agent running as `agent_uid`: nullopt for the agent's own user (no
/// switch), the run's user, or the sentence why the agent refuses the run (it reaches the run's
/// exit reason).
std::variant<std::optional<process::unix_identity>, std::string> run_as_for(task_user_policy policy,
                                                                             const pb::TaskUser& user, uid_t agent_uid);

}  // namespace det::runtime
