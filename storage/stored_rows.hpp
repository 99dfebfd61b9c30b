#pragma once
// Rows that actors hand each other (a user, a token and a task's secrets as stored) and the ids the
// schema creates. Apart from database.hpp, so that the actors' protocols, their spawn functions and
// the routes need not include the database class.

#include <cstdint>
#include <string>

#include "messages/api.pb.h"

namespace det::storage {

/// admin, the user the schema creates first (migration 0012), owner of what was stored before users.
constexpr int64_t admin_user_id = 1;
/// The workspace and project the schema creates first (Uncategorized): they hold what names none.
constexpr int64_t default_workspace_id = 1;
constexpr int64_t default_project_id = 1;

/// A user as stored: the password only as its Argon2id string, empty when none is set.
struct stored_user {
  pb::User user;
  std::string password_hash;
};

/// A bearer token's row and the user it speaks for.
struct token_holder {
  pb::AccessToken token;
  pb::User user;
};

/// What a command, shell, notebook or TensorBoard holds that is never shown in a list.
struct task_secrets {
  std::string allocation_token;  ///< its run's token
  std::string service_token;     ///< a notebook's token; "" for other kinds
  std::string host_private_key;  ///< a shell's sshd host key; "" for other kinds
};

} // namespace det::storage
