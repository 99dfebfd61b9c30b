#pragma once
// Who is calling the REST API: the user a request's bearer token speaks for, and what that user
// may do. Tokens are looked up by their SHA-256 in the accounts actor once, then answered from
// memory for up to a minute (a task's token for a second: its task's end revokes it elsewhere), so
// that authentication costs a hash and a map lookup per request; a logout, revocation, password
// change or deactivation on this master forgets them at once.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>

#include "master/accounts/accounts_protocol.hpp"
#include "caf/expected.hpp"

namespace caf {
class actor_system;
}

namespace det::runtime {

/// The user a request speaks for.
struct principal {
  int64_t user_id = 0;
  std::string username;
  bool admin = false;
  int64_t token_id = 0;   // the session or access token it came with
  std::string token_sha256;
  pb::TokenKind kind = pb::TOKEN_KIND_UNSPECIFIED;
};

class authenticator {
public:
  authenticator(caf::actor_system& sys, accounts_actor accounts);

  /// The user the token whose SHA-256 is `sha` speaks for, or errc::unauthenticated saying why
  /// not, handed to `done` without waiting: at once while the token is cached, else on one of
  /// CAF's threads once the accounts actor has answered. Route coroutines await user_of_token()
  /// (route_guards.hpp) instead.
  void authenticate_then(const std::string& sha, std::function<void(caf::expected<principal>)> done);

  /// A lookup of a token that is not cached: what the accounts actor is asked
  /// (authenticate_atom, sha) and what looked_up() needs to cache its answer safely.
  struct lookup {
    std::string sha;
    std::chrono::system_clock::time_point asked_at;
    uint64_t forgets = 0;  // a forget since the lookup began: its answer is not cached
  };
  /// The user the token whose SHA-256 is `sha` speaks for while it is cached (or why it no
  /// longer does); else the lookup to make.
  std::variant<caf::expected<principal>, lookup> cached(const std::string& sha);
  /// The user of `asked`'s token from the accounts actor's answer (its token holder, or the error
  /// of the ask), cached unless a forget overtook the lookup.
  caf::expected<principal> looked_up(const lookup& asked, caf::expected<storage::token_holder> found);
  /// How long a lookup may wait for the accounts actor.
  static constexpr auto lookup_timeout = std::chrono::seconds(10);
  /// Who lookups ask.
  const accounts_actor& accounts() const { return accounts_; }

  /// A token just issued: its first use needs no lookup.
  void remember(const principal& who, std::chrono::system_clock::time_point expires);
  /// As remember(), unless a forget happened since `forgets` was read.
  void remember_unless_forgotten(const principal& who, std::chrono::system_clock::time_point expires, uint64_t forgets);
  void forget_token(int64_t token_id);
  void forget_user(int64_t user_id);

private:
  struct cache_entry {
    principal who;
    std::chrono::system_clock::time_point expires;
    std::chrono::steady_clock::time_point looked_up;
  };
  void store_locked(const principal& who, std::chrono::system_clock::time_point expires);

  caf::actor_system& sys_;
  accounts_actor accounts_;
  std::mutex mutex_;
  std::unordered_map<std::string, cache_entry> by_sha256_;
  // Counts forgets: a lookup that a forget overtook does not cache what it found.
  uint64_t forgets_ = 0;
};

/// The TOKEN of "Bearer TOKEN" (the scheme in any case), or "".
std::string bearer_token(const std::string& authorization);
/// The SHA-256 of the token `authorization` ("Bearer TOKEN") carries, or errc::unauthenticated
/// saying what is wrong with the header.
caf::expected<std::string> bearer_sha256(const std::string& authorization);

/// forbidden when `who` came with a task's token (DET_USER_TOKEN): "<action> needs a login, not a
/// task's token". Whoever reads a task's environment must not turn it into lasting access.
caf::error require_personal_token(const principal& who, const std::string& action);
/// forbidden unless `who` is an admin: "<action> needs an admin".
caf::error require_admin(const principal& who, const std::string& action);
/// forbidden unless `who` owns it (`owner`) or is an admin: "only <thing>'s owner (<name>) or an admin may <verb> it".
caf::error require_owner(const principal& who, int64_t owner_id, const std::string& owner_name, const std::string& thing,
                         const std::string& verb);
inline caf::error require_owner(const principal& who, const pb::User& owner, const std::string& thing,
                                const std::string& verb) {
  return require_owner(who, owner.id(), owner.username(), thing, verb);
}

} // namespace det::runtime
