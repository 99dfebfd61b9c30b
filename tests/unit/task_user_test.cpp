// Which Unix user a det user's work runs as (auth/task_user.hpp): linked users as linked,
// unlinked ones at task_uid_base + id, and the links and bases an admin may not set.

#include <doctest/doctest.h>

#include "auth/task_user.hpp"

using det::auth::task_user;

namespace {

task_user linked(int64_t uid, int64_t gid, std::string user = "alice", std::string group = "staff") {
  return {uid, gid, std::move(user), std::move(group)};
}

}  // namespace

TEST_CASE("an unlinked user runs as the base plus its id, uid and gid alike, named after its id") {
  auto out = det::auth::task_user_of(7, std::nullopt, 200000);
  REQUIRE(std::holds_alternative<task_user>(out));
  const auto& u = std::get<task_user>(out);
  CHECK(u.uid == 200007);
  CHECK(u.gid == 200007);
  CHECK(u.user == "det-user-7");
  CHECK(u.group == "det-user-7");
}

TEST_CASE("two unlinked users never share a uid") {
  auto a = std::get<task_user>(det::auth::task_user_of(1, std::nullopt, 200000));
  auto b = std::get<task_user>(det::auth::task_user_of(2, std::nullopt, 200000));
  CHECK(a.uid != b.uid);
}

TEST_CASE("a linked user runs as its link") {
  auto out = det::auth::task_user_of(3, linked(1500, 1600), 200000);
  REQUIRE(std::holds_alternative<task_user>(out));
  CHECK(std::get<task_user>(out).uid == 1500);
  CHECK(std::get<task_user>(out).gid == 1600);
  CHECK(std::get<task_user>(out).user == "alice");
}

TEST_CASE("a user id past the uid range has no unlinked uid, and says how to link one") {
  auto out = det::auth::task_user_of(det::auth::largest_task_id, std::nullopt, 200000);
  REQUIRE(std::holds_alternative<std::string>(out));
  CHECK(std::get<std::string>(out).find("link-with-agent-user") != std::string::npos);
  CHECK(std::holds_alternative<task_user>(det::auth::task_user_of(det::auth::largest_task_id - 200000, std::nullopt, 200000)));
  CHECK(std::holds_alternative<std::string>(det::auth::task_user_of(0, std::nullopt, 200000)));
}

TEST_CASE("links to root, out of range or into the unlinked range are refused with a sentence naming the field") {
  CHECK(det::auth::bad_link_reason(linked(1500, 1500), 200000).empty());
  CHECK(det::auth::bad_link_reason(linked(0, 1500), 200000).find("agent_uid 0 is root's") != std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(1500, 0), 200000).find("agent_gid 0 is root's") != std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(-1, 1500), 200000).find("agent_uid must be between") != std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(1500, 4294967295), 4294967295).find("agent_gid must be between") !=
        std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(200001, 1500), 200000).find("range of unlinked det users") !=
        std::string::npos);
}

TEST_CASE("link names must be Unix names") {
  CHECK(det::auth::bad_link_reason(linked(1500, 1500, "Alice"), 200000).find("agent_user must be") != std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(1500, 1500, "alice", ""), 200000).find("agent_group must be") !=
        std::string::npos);
  CHECK(det::auth::bad_link_reason(linked(1500, 1500, "a:b"), 200000).find("agent_user must be") != std::string::npos);
}
