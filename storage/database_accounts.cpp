// Users, bearer tokens and ownership. Passwords arrive already hashed and tokens as their
// SHA-256: nothing here ever sees a secret in clear.

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

const std::string user_columns =
    "u.id, u.username, u.admin, u.active, " + micros_of("u.created_at") + ", COALESCE(u.password_hash, ''), "
    "u.agent_uid, u.agent_gid, u.agent_user, u.agent_group";
constexpr pqxx::row::size_type user_column_count = 10;
const std::string user_select = "SELECT " + user_columns + " FROM users u ";

stored_user user_from(const pqxx::row& row) {
  stored_user out;
  out.user.set_id(row[0].as<int64_t>());
  out.user.set_username(row[1].as<std::string>());
  out.user.set_admin(row[2].as<bool>());
  out.user.set_active(row[3].as<bool>());
  if (auto time = time_from(row[4])) *out.user.mutable_created_at() = *time;
  out.password_hash = row[5].as<std::string>();
  if (!row[6].is_null()) {
    auto* link = out.user.mutable_agent_user_group();
    link->set_agent_uid(row[6].as<int64_t>());
    link->set_agent_gid(row[7].as<int64_t>());
    link->set_agent_user(row[8].as<std::string>());
    link->set_agent_group(row[9].as<std::string>());
  }
  return out;
}

const std::string token_columns = "t.id, t.user_id, u.username, t.kind, t.description, " + micros_of("t.created_at") +
                                  ", " + micros_of("t.expires_at") + ", t.revoked_at IS NOT NULL";
const std::string token_select = "SELECT " + token_columns + " FROM user_tokens t JOIN users u ON u.id = t.user_id ";

pb::AccessToken token_from(const pqxx::row& row) {
  pb::AccessToken t;
  t.set_id(row[0].as<int64_t>());
  t.set_user_id(row[1].as<int64_t>());
  t.set_username(row[2].as<std::string>());
  pb::TokenKind kind = pb::TOKEN_KIND_UNSPECIFIED;
  pb::TokenKind_Parse(row[3].as<std::string>(), &kind);
  t.set_kind(kind);
  t.set_description(row[4].as<std::string>());
  if (auto time = time_from(row[5])) *t.mutable_created_at() = *time;
  if (auto time = time_from(row[6])) *t.mutable_expires_at() = *time;
  t.set_revoked(row[7].as<bool>());
  return t;
}

pqxx::binarystring bytes(const std::string& digest) {
  return pqxx::binarystring(digest);
}

}  // namespace

std::optional<stored_user> database::find_user(const std::string& username) {
  return describing_failure("read user " + username, [&]() -> std::optional<stored_user> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(user_select + "WHERE u.username = $1", username);
    if (rows.empty()) return std::nullopt;
    return user_from(rows[0]);
  });
}

std::optional<stored_user> database::get_user(int64_t id) {
  return describing_failure("read user " + std::to_string(id), [&]() -> std::optional<stored_user> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(user_select + "WHERE u.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return user_from(rows[0]);
  });
}

std::vector<pb::User> database::list_users() {
  return describing_failure("list the users", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::User> users;
    for (const auto& row : tx.exec(user_select + "ORDER BY u.id")) users.push_back(user_from(row).user);
    return users;
  });
}

std::optional<pb::User> database::insert_user(const std::string& username, const std::string& password_hash,
                                              bool admin) {
  return describing_failure("store user " + username, [&]() -> std::optional<pb::User> {
    pqxx::work tx{impl_->connection};
    auto rows = tx.exec_params("INSERT INTO users AS u (username, password_hash, admin) VALUES ($1, $2, $3) "
                               "ON CONFLICT (username) DO NOTHING RETURNING " + user_columns,
                               username, password_hash, admin);
    if (rows.empty()) return std::nullopt;
    tx.commit();
    return user_from(rows[0]).user;
  });
}

void database::set_password_hash(int64_t user_id, const std::string& password_hash) {
  describing_failure("change the password of user " + std::to_string(user_id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE users SET password_hash = $2 WHERE id = $1", user_id, password_hash),
                   "user " + std::to_string(user_id));
    // Whoever knew the old password may have logged in or made tokens with it: all of them end.
    tx.exec_params("UPDATE user_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL", user_id);
    tx.commit();
  });
}

void database::set_agent_user_group(int64_t user_id, const pb::AgentUserGroup& link) {
  describing_failure("link user " + std::to_string(user_id) + " to a Unix user on agents", [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE users SET agent_uid = $2, agent_gid = $3, agent_user = $4, agent_group = $5 "
                                  "WHERE id = $1",
                                  user_id, link.agent_uid(), link.agent_gid(), link.agent_user(), link.agent_group()),
                   "user " + std::to_string(user_id));
    tx.commit();
  });
}

void database::set_user_active(int64_t user_id, bool active) {
  describing_failure("change whether user " + std::to_string(user_id) + " is active", [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE users SET active = $2 WHERE id = $1", user_id, active),
                   "user " + std::to_string(user_id));
    tx.commit();
  });
}

bool database::set_admin_password_if_unset(const std::string& password_hash) {
  return describing_failure("set the first admin password", [&] {
    pqxx::work tx{impl_->connection};
    auto result = tx.exec_params(
        "UPDATE users SET password_hash = $1 WHERE username = 'admin' AND password_hash IS NULL", password_hash);
    tx.commit();
    return result.affected_rows() == 1;
  });
}

pb::AccessToken database::insert_token(int64_t user_id, const std::string& sha256, pb::TokenKind kind,
                                       const std::string& description, int64_t lifespan_s) {
  return describing_failure("store a token of user " + std::to_string(user_id), [&] {
    pqxx::work tx{impl_->connection};
    auto id = tx.exec_params1("INSERT INTO user_tokens (user_id, token_sha256, kind, description, expires_at) "
                              "VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING id",
                              user_id, bytes(sha256), pb::TokenKind_Name(kind), description,
                              static_cast<double>(lifespan_s))[0]
                  .as<int64_t>();
    auto row = tx.exec_params1(token_select + "WHERE t.id = $1", id);
    tx.commit();
    return token_from(row);
  });
}

std::optional<token_holder> database::find_token(const std::string& sha256) {
  return describing_failure("look up a token", [&]() -> std::optional<token_holder> {
    pqxx::read_transaction tx{impl_->connection};
    // One query on every authentication that misses the gateway's cache: the user's columns, then the token's.
    auto rows = tx.exec_params("SELECT " + user_columns + ", " + token_columns +
                                   " FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_sha256 = $1",
                               bytes(sha256));
    if (rows.empty()) return std::nullopt;
    const auto& row = rows[0];
    token_holder out;
    out.user = user_from(row.slice(0, user_column_count)).user;
    out.token = token_from(row.slice(user_column_count, row.size()));
    return out;
  });
}

std::optional<pb::AccessToken> database::get_token(int64_t id) {
  return describing_failure("read token " + std::to_string(id), [&]() -> std::optional<pb::AccessToken> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(token_select + "WHERE t.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return token_from(rows[0]);
  });
}

std::vector<pb::AccessToken> database::list_access_tokens(int64_t user_id) {
  return describing_failure("list the access tokens", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::AccessToken> tokens;
    for (const auto& row : tx.exec_params(token_select + "WHERE t.kind <> 'TOKEN_KIND_SESSION' AND ($1 = 0 OR t.user_id = $1) "
                                                         "ORDER BY t.id",
                                          user_id))
      tokens.push_back(token_from(row));
    return tokens;
  });
}

void database::revoke_token(int64_t id) {
  describing_failure("revoke token " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("UPDATE user_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL", id);
    tx.commit();
  });
}

void database::revoke_tokens_described(int64_t user_id, const std::string& description) {
  describing_failure("revoke the tokens described as " + description, [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("UPDATE user_tokens SET revoked_at = now() WHERE user_id = $1 AND description = $2 "
                   "AND revoked_at IS NULL",
                   user_id, description);
    tx.commit();
  });
}

std::optional<pb::User> database::experiment_owner(int64_t experiment_id) {
  return describing_failure("read the owner of experiment " + std::to_string(experiment_id),
                            [&]() -> std::optional<pb::User> {
                              pqxx::read_transaction tx{impl_->connection};
                              auto rows = tx.exec_params(
                                  user_select + "JOIN experiments e ON e.owner_id = u.id WHERE e.id = $1", experiment_id);
                              if (rows.empty()) return std::nullopt;
                              return user_from(rows[0]).user;
                            });
}

}  // namespace det::storage
