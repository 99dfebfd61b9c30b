// Whom an agent runs a run as (agent/task_user_policy.hpp): the owner's user on a root agent,
// a refusal naming --run-tasks-as on any other, the agent's own user only when told so.

#include <doctest/doctest.h>

#include "agent/task_user_policy.hpp"

using det::runtime::run_as_for;
using det::runtime::task_user_policy;

namespace {

det::pb::TaskUser user(uint32_t uid, uint32_t gid) {
  det::pb::TaskUser u;
  u.set_uid(uid);
  u.set_gid(gid);
  u.set_user("det-user-3");
  return u;
}

}  // namespace

TEST_CASE("a root agent runs each run as its owner's uid and gid") {
  auto out = run_as_for(task_user_policy::owner, user(200003, 200004), 0);
  auto who = std::get<std::optional<det::process::unix_identity>>(out);
  REQUIRE(who);
  CHECK(who->uid == 200003);
  CHECK(who->gid == 200004);
}

TEST_CASE("an agent that is not root refuses other users' work with a sentence naming --run-tasks-as") {
  auto out = run_as_for(task_user_policy::owner, user(200003, 200003), 1000);
  REQUIRE(std::holds_alternative<std::string>(out));
  CHECK(std::get<std::string>(out).find("--run-tasks-as=agent-user") != std::string::npos);
  // Work of a user linked to the agent's own uid is its own.
  CHECK_FALSE(std::get<std::optional<det::process::unix_identity>>(run_as_for(task_user_policy::owner, user(1000, 1000), 1000)));
}

TEST_CASE("a run without a named user is refused rather than run as root") {
  CHECK(std::holds_alternative<std::string>(run_as_for(task_user_policy::owner, user(0, 0), 0)));
}

TEST_CASE("--run-tasks-as=agent-user runs everyone's work unswitched, and the words read back") {
  CHECK_FALSE(std::get<std::optional<det::process::unix_identity>>(run_as_for(task_user_policy::agent_user, user(200003, 200003), 0)));
  for (auto p : {task_user_policy::owner, task_user_policy::agent_user})
    CHECK(det::runtime::task_user_policy_from(det::runtime::to_string(p)) == p);
  CHECK_FALSE(det::runtime::task_user_policy_from("root"));
}
