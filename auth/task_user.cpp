#include "auth/task_user.hpp"

namespace det::auth {

namespace {

// Debian's useradd default NAME_REGEX, which every agent's tools accept: it starts with a letter
// or '_' and has at most 32 characters.
bool portable_name(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  const char first = name.front();
  if (!((first >= 'a' && first <= 'z') || first == '_')) return false;
  return name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

}  // namespace

std::string bad_link_reason(const task_user& link, int64_t base) {
  for (auto [id, what] : {std::pair{link.uid, "agent_uid"}, std::pair{link.gid, "agent_gid"}}) {
    if (id == 0)
      return std::string(what) + " 0 is root's: a det user linked to it would run as root on every agent";
    if (id < 0 || id > largest_task_id)
      return std::string(what) + " must be between 1 and " + std::to_string(largest_task_id) + ", not " +
             std::to_string(id);
    if (id >= base)
      return std::string(what) + " " + std::to_string(id) + " is in the range of unlinked det users (from " +
             std::to_string(base) + ", security.task_uid_base): it would be another det user's";
  }
  if (!portable_name(link.user))
    return "agent_user must be a Unix user name (lower-case letters, digits, '_' and '-', starting with a letter or "
           "'_', at most 32 characters), not \"" + link.user + "\"";
  if (!portable_name(link.group))
    return "agent_group must be a Unix group name (lower-case letters, digits, '_' and '-', starting with a letter or "
           "'_', at most 32 characters), not \"" + link.group + "\"";
  return "";
}

std::variant<task_user, std::string> task_user_of(int64_t user_id, const std::optional<task_user>& link, int64_t base) {
  if (link) return *link;
  if (user_id <= 0) return "work without an owner has no Unix user to run as (user id " + std::to_string(user_id) + ")";
  if (user_id > largest_task_id - base)
    return "det user " + std::to_string(user_id) + " has no unlinked uid: " + std::to_string(base) + " + " +
           std::to_string(user_id) + " is past the largest uid " + std::to_string(largest_task_id) +
           "; an admin can link it with det user link-with-agent-user";
  const int64_t id = base + user_id;
  const std::string name = "det-user-" + std::to_string(user_id);
  return task_user{id, id, name, name};
}

}  // namespace det::auth
