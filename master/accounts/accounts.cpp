// The accounts actor: users and bearer tokens in PostgreSQL, on a connection of its own. It
// stores and reads what it is given; passwords reach it hashed and tokens as their SHA-256.

#include <memory>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "node/log.hpp"

namespace det {
namespace {

struct accounts_state {
  static inline const char* name = "accounts";
  std::unique_ptr<storage::database> db;
};

using self_ptr = accounts_actor::stateful_pointer<accounts_state>;

/// `read()`'s value, not_found with `missing` when it is empty, or storage_failed.
template <class Read>
auto found_or(const std::string& what, const std::string& missing, Read&& read)
    -> caf::result<typename std::invoke_result_t<Read&>::value_type> {
  auto row = attempt_storage("cannot read " + what, std::forward<Read>(read));
  if (!row)
    return std::move(row.error());
  if (!*row)
    return make_error(errc::not_found, missing);
  return std::move(**row);
}

template <class Write>
auto write(const std::string& what, Write&& w) {
  return answer_with(attempt_storage("cannot " + what, std::forward<Write>(w)));
}

accounts_actor::behavior_type accounts_impl(self_ptr self, std::string conninfo) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  auto& db = *self->state.db;
  return {
      [&db](get_atom, const std::string& name) {
        return found_or("user " + name, "there is no user " + name, [&] { return db.find_user(name); });
      },
      [&db](get_atom, user_id id) {
        auto text = std::to_string(id.value);
        return found_or("user " + text, "there is no user with id " + text, [&] { return db.get_user(id.value); });
      },
      [&db](list_atom) {
        return write("list the users", [&] {
          pb::GetUsersResponse out;
          for (auto& u : db.list_users()) *out.add_users() = std::move(u);
          return out;
        });
      },
      [&db](create_atom, const std::string& name, const std::string& hash, bool admin) {
        return answer_or_refusal<pb::User>("store user " + name, [&]() -> or_refusal<pb::User> {
          if (auto user = db.insert_user(name, hash, admin))
            return *user;
          return make_error(errc::invalid_input, "the user name " + name + " is taken");
        });
      },
      [&db](password_atom, user_id id, const std::string& hash) {
        return write("change a password", [&] {
          db.set_password_hash(id.value, hash);
          return true;
        });
      },
      [&db](enable_atom, user_id id, bool active) {
        return write("change whether a user is active", [&] {
          db.set_user_active(id.value, active);
          return true;
        });
      },
      [&db](update_atom, user_id id, const pb::AgentUserGroup& link) {
        return write("link a user to a Unix user on agents", [&] {
          db.set_agent_user_group(id.value, link);
          return true;
        });
      },
      [&db](create_atom, user_id id, const std::string& sha256, pb::TokenKind kind, const std::string& description,
            int64_t lifespan_s) {
        return write("store a token", [&] { return db.insert_token(id.value, sha256, kind, description, lifespan_s); });
      },
      [&db](authenticate_atom, const std::string& sha256) {
        return found_or("a token", "the bearer token is not one this master issued", [&] { return db.find_token(sha256); });
      },
      [&db](get_atom, token_id id) {
        auto text = std::to_string(id.value);
        return found_or("token " + text, "there is no token " + text, [&] { return db.get_token(id.value); });
      },
      [&db](list_atom, user_id id) {
        return write("list the access tokens", [&] {
          pb::GetAccessTokensResponse out;
          for (auto& t : db.list_access_tokens(id.value)) *out.add_tokens() = std::move(t);
          return out;
        });
      },
      [&db](remove_atom, token_id id) {
        return write("revoke a token", [&] {
          db.revoke_token(id.value);
          return true;
        });
      },
      [&db](remove_atom, user_id id, const std::string& description) {
        try {
          db.revoke_tokens_described(id.value, description);
        } catch (const std::exception& e) {
          logs::error(logs::component::master, e.what());
        }
      },
      [&db](owner_atom, experiment_id id) {
        auto text = std::to_string(id.value);
        return found_or("the owner of experiment " + text, "experiment " + text + " not found",
                        [&] { return db.experiment_owner(id.value); });
      },
  };
}

} // namespace

accounts_actor spawn_accounts(caf::actor_system& sys, const std::string& conninfo) {
  return sys.spawn<caf::detached>(accounts_impl, conninfo);
}

} // namespace det
