#include "tools/cli_user.hpp"

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <unistd.h>

#include "config/duration.hpp"
#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/auth_store.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

/// "30d", "12h", "90m", "45s" or plain seconds, as seconds; throws a sentence naming --lifespan.
int64_t lifespan_seconds(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 12 && text.find_first_not_of("0123456789") == std::string::npos;
  auto seconds = digits ? std::optional<int64_t>{std::stoll(text)} : config::parse_duration_s(text);
  if (!seconds || *seconds <= 0)
    throw std::runtime_error("--lifespan: expected a duration such as 30d, 12h or 3600, not \"" + text + "\"");
  return *seconds;
}

/// `username`'s password: DET_PASS when set (scripts), else asked.
std::string password_of(const std::string& username) {
  const char* pass = std::getenv("DET_PASS");
  return pass ? pass : read_secret("Password for " + username + ": ");
}

/// A new password, asked twice on a terminal.
std::string new_password(const std::string& whose) {
  auto password = read_secret("New password for " + whose + ": ");
  if (isatty(0) && read_secret("Confirm the password: ") != password)
    throw std::runtime_error("the passwords do not match; nothing was changed");
  return password;
}

} // namespace

pb::LoginResponse log_in(rest_client& master, const std::string& username, const std::string& password) {
  pb::LoginRequest request;
  request.set_username(username);
  request.set_password(password);
  pb::LoginResponse reply;
  master.post("/api/v1/auth/login", request, reply);
  return reply;
}

int login(rest_client& master, std::string username) {
  if (username.empty())
    username = env_or("DET_USER", "");
  if (username.empty()) {
    std::cerr << "Username: " << std::flush;
    std::getline(std::cin, username);
  }
  auto reply = log_in(master, username, password_of(username));
  save_login(master.master_url(), {reply.user().username(), reply.token()});
  std::cout << "Logged in to " << master.master_url() << " as user " << reply.user().username()
            << (reply.user().admin() ? " (admin)" : "") << ".\n";
  return 0;
}

int logout(rest_client& master) {
  if (std::getenv("DET_USER_TOKEN") != nullptr)
    throw std::runtime_error("DET_USER_TOKEN is set: it is an access token, not a login; revoke it with det token revoke ID");
  pb::LoginResponse ignored;
  try {
    master.post("/api/v1/auth/logout", pb::LoginRequest{}, ignored);
  } catch (const rest_error& e) {
    if (e.which() != rest_error::kind::http || e.status() != 401)
      throw;  // an expired or revoked session is logged out already
  }
  forget_login(master.master_url());
  std::cout << "Logged out of " << master.master_url() << ".\n";
  return 0;
}

int whoami(rest_client& master, bool json) {
  auto me = master.get<pb::GetMeResponse>("/api/v1/me");
  if (json)
    std::cout << det::to_json(me, true) << '\n';
  else
    std::cout << "You are logged in as user " << me.user().username() << (me.user().admin() ? " (admin)" : "") << ".\n";
  return 0;
}

int list_users(rest_client& master, bool json) {
  auto users = master.get<pb::GetUsersResponse>("/api/v1/users");
  if (json) {
    std::cout << det::to_json(users, true) << '\n';
    return 0;
  }
  table out({"ID", "Username", "Admin", "Active", "Created"});
  for (const auto& u : users.users())
    out.add_row({std::to_string(u.id()), u.username(), yes_no(u.admin()), yes_no(u.active()), format_time(u.created_at())});
  out.print(std::cout);
  return 0;
}

int create_user(rest_client& master, const std::string& username, bool admin) {
  pb::PostUserRequest request;
  request.set_username(username);
  request.set_admin(admin);
  request.set_password(new_password(username));
  pb::PostUserResponse reply;
  master.post("/api/v1/users", request, reply);
  std::cout << "Created user " << reply.user().username() << " (id " << reply.user().id() << ")"
            << (admin ? " as an admin" : "") << ".\n";
  return 0;
}

int change_password(rest_client& master, std::string username) {
  const auto me = master.get<pb::GetMeResponse>("/api/v1/me").user().username();
  if (username.empty())
    username = me;
  pb::SetUserPasswordRequest request;
  if (username == me)
    request.set_old_password(read_secret("Current password for " + me + ": "));
  request.set_password(new_password(username));
  pb::GetMeResponse ignored;
  master.post("/api/v1/users/" + username + "/password", request, ignored);
  std::cout << "Changed the password of user " << username << "; its sessions were logged out.\n";
  if (username == me && std::getenv("DET_USER_TOKEN") == nullptr) {
    // This session was one of them: log in again with the new password.
    save_login(master.master_url(), {me, log_in(master, me, request.password()).token()});
  }
  return 0;
}

int set_user_active(rest_client& master, const std::string& username, bool active) {
  pb::PatchUserRequest request;
  request.set_active(active);
  pb::GetMeResponse ignored;
  master.patch("/api/v1/users/" + username, request, ignored);
  std::cout << (active ? "Activated" : "Deactivated") << " user " << username << ".\n";
  return 0;
}

int link_with_agent_user(rest_client& master, const std::string& username, const pb::AgentUserGroup& link) {
  pb::PatchUserRequest request;
  *request.mutable_agent_user_group() = link;
  pb::GetMeResponse ignored;
  master.patch("/api/v1/users/" + username, request, ignored);
  std::cout << "User " << username << "'s work runs as " << link.agent_user() << " (uid " << link.agent_uid() << ") in "
            << link.agent_group() << " (gid " << link.agent_gid() << ") on agents.\n";
  return 0;
}

int create_token(rest_client& master, const std::string& lifespan, const std::string& description, bool json) {
  pb::CreateAccessTokenRequest request;
  if (!lifespan.empty())
    request.set_lifespan_s(lifespan_seconds(lifespan));
  request.set_description(description);
  // A lasting token needs its user's password again (DET_PASS, as for det user login), unless an admin asks.
  const auto me = master.get<pb::GetMeResponse>("/api/v1/me").user();
  if (!me.admin())
    request.set_password(password_of(me.username()));
  pb::CreateAccessTokenResponse reply;
  master.post("/api/v1/tokens", request, reply);
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  std::cout << reply.token() << '\n';
  std::cerr << "Token " << reply.info().id() << " of user " << reply.info().username() << ", valid until "
            << format_time(reply.info().expires_at()) << ". It is shown only now: send it as "
            << "\"Authorization: Bearer TOKEN\" or set DET_USER_TOKEN.\n";
  return 0;
}

int list_tokens(rest_client& master, bool json) {
  auto tokens = master.get<pb::GetAccessTokensResponse>("/api/v1/tokens");
  if (json) {
    std::cout << det::to_json(tokens, true) << '\n';
    return 0;
  }
  table out({"ID", "User", "Description", "Created", "Expires", "Revoked"});
  for (const auto& t : tokens.tokens())
    out.add_row({std::to_string(t.id()), t.username(), t.description(), format_time(t.created_at()),
                 format_time(t.expires_at()), yes_no(t.revoked())});
  out.print(std::cout);
  return 0;
}

int revoke_token(rest_client& master, std::int64_t id) {
  pb::GetMeResponse ignored;
  master.del("/api/v1/tokens/" + std::to_string(id), ignored);
  std::cout << "Revoked token " << id << ".\n";
  return 0;
}

} // namespace det::tools
