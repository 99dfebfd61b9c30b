#include "agent/task_user_policy.hpp"

namespace det::runtime {

std::string to_string(task_user_policy policy) {
  switch (policy) {
    case task_user_policy::agent_user: return "agent-user";
    case task_user_policy::owner: break;
  }
  return "owner";
}

std::optional<task_user_policy> task_user_policy_from(const std::string& word) {
  if (word == "owner") return task_user_policy::owner;
  if (word == "agent-user") return task_user_policy::agent_user;
  return std::nullopt;
}

std::variant<std::optional<process::unix_identity>, std::string> run_as_for(task_user_policy policy,
                                                                             const pb::TaskUser& user, uid_t agent_uid) {
  if (policy == task_user_policy::agent_user) return std::nullopt;
  if (user.uid() == 0 || user.gid() == 0)
    return std::string("the master named no Unix user for this run, and this agent runs nobody's work as root");
  if (user.uid() == agent_uid) return std::nullopt;  // a user linked to the agent's own uid
  if (agent_uid != 0)
    return "this agent runs as uid " + std::to_string(agent_uid) + " and cannot switch to " + user.user() + " (uid " +
           std::to_string(user.uid()) + "), whose work this is: run the agent as root, or start it with "
           "--run-tasks-as=agent-user to run every det user's work as the agent's own user";
  return process::unix_identity{user.uid(), user.gid()};
}

}  // namespace det::runtime
