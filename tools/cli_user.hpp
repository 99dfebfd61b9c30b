#pragma once
// `det user ...` and `det token ...`, after Determined's CLI: logins, users, access tokens.

#include <cstdint>
#include <string>

#include "messages/api.pb.h"

namespace det::tools {

class rest_client;

/// POST /api/v1/auth/login: a new session of `username` (the reply's token and user).
pb::LoginResponse log_in(rest_client& master, const std::string& username, const std::string& password);

/// Logs `username` in (DET_USER, else asked; the password from DET_PASS, else asked) and saves
/// the session for this master.
int login(rest_client& master, std::string username);
int logout(rest_client& master);
int whoami(rest_client& master, bool json);
int list_users(rest_client& master, bool json);
/// The new user's password is asked for (a line of stdin when it is not a terminal).
int create_user(rest_client& master, const std::string& username, bool admin);
/// `username` empty: the logged-in user's own.
int change_password(rest_client& master, std::string username);
int set_user_active(rest_client& master, const std::string& username, bool active);
/// PATCH /api/v1/users/NAME with agent_user_group: the Unix user `username`'s work runs as on
/// agents (admins only).
int link_with_agent_user(rest_client& master, const std::string& username, const pb::AgentUserGroup& link);

/// `lifespan` like "30d", "12h", or seconds; "" for the master's default.
int create_token(rest_client& master, const std::string& lifespan, const std::string& description, bool json);
int list_tokens(rest_client& master, bool json);
int revoke_token(rest_client& master, std::int64_t id);

} // namespace det::tools
