#pragma once
// Which Unix user a det user's work runs as on agents (Determined's agent_user_group): the one an
// admin linked it to, or else one of the cluster's own, task_uid_base + the user's id, so that
// unlinked users are kept apart from each other as well as from the agent. Pure: the master
// computes it for each run and the agent only applies it.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace det::auth {

/// Where the uids of unlinked users begin (security.task_uid_base in master.toml): above the
/// ranges Debian gives system users (100-999), people (1000-59999) and subordinate ids of
/// rootless containers (100000-165535 for the first user).
constexpr int64_t default_task_uid_base = 200000;
/// The smallest base master.toml may set: below 1000 are the system's own users.
constexpr int64_t smallest_task_uid_base = 1000;
/// The largest uid or gid a task user may have: (uid_t)-1 means "unchanged" to setuid, and
/// 65534 below it is nobody's only by convention, so only -1 itself is kept out.
constexpr int64_t largest_task_id = 4294967294;  // 2^32 - 2

/// A Unix identity with names: what ps, USER and a shell's login show.
struct task_user {
  int64_t uid = 0;
  int64_t gid = 0;
  std::string user;
  std::string group;
};

/// Why an admin may not link a det user to `link`, as a sentence, or "": ids 0 (root's), out of
/// range, or in the unlinked users' range from `base` (it would be another det user's), and names
/// that are not portable Unix names.
std::string bad_link_reason(const task_user& link, int64_t base);

/// The identity det user `user_id`'s work runs as: `link` when an admin linked one, else
/// base + user_id for uid and gid, named det-user-<id>. A sentence instead when none can be
/// given (the sum overflows the ids, or the id is not a user's).
std::variant<task_user, std::string> task_user_of(int64_t user_id, const std::optional<task_user>& link, int64_t base);

}  // namespace det::auth
