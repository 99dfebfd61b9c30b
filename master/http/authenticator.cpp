#include "master/http/authenticator.hpp"

#include <algorithm>

#include "master/accounts/token_check.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "master/http/actor_ask.hpp"
#include "messages/errc.hpp"

namespace det::runtime {
namespace {

// A row changed behind this master's back (an operator's SQL) takes effect within this long.
constexpr auto cache_for = std::chrono::seconds(60);
// A task's token is revoked by its task's actor, which cannot tell the gateway: it is looked up
// again after this long, so that it ends within a second of its task.
constexpr auto task_token_cache_for = std::chrono::seconds(1);

constexpr std::size_t max_cached = 100000;

std::chrono::steady_clock::duration cache_period(pb::TokenKind kind) {
  return kind == pb::TOKEN_KIND_TASK ? task_token_cache_for : cache_for;
}

caf::error unauthenticated(const std::string& sentence) {
  return make_error(errc::unauthenticated, sentence);
}

} // namespace

std::string bearer_token(const std::string& authorization) {
  const std::string scheme = "Bearer ";
  if (authorization.size() <= scheme.size() ||
      !std::equal(scheme.begin(), scheme.end(), authorization.begin(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
      }))
    return "";
  return authorization.substr(scheme.size());
}

authenticator::authenticator(caf::actor_system& sys, accounts_actor accounts)
    : sys_(sys), accounts_(std::move(accounts)) {}

caf::expected<std::string> bearer_sha256(const std::string& authorization) {
  if (authorization.empty())
    return unauthenticated("this route needs a login: send the header \"Authorization: Bearer TOKEN\" with a "
                           "token from det user login, POST /api/v1/auth/login or det token create");
  const auto token = bearer_token(authorization);
  if (token.empty())
    return unauthenticated("the Authorization header must be \"Bearer TOKEN\"");
  return auth::sha256(token);
}

std::variant<caf::expected<principal>, authenticator::lookup> authenticator::cached(const std::string& sha) {
  const auto now = std::chrono::system_clock::now();
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = by_sha256_.find(sha);
  if (it != by_sha256_.end() &&
      std::chrono::steady_clock::now() - it->second.looked_up < cache_period(it->second.who.kind)) {
    if (now < it->second.expires)
      return caf::expected<principal>{it->second.who};
    by_sha256_.erase(it);  // expired: the lookup says so with the time
  }
  return lookup{sha, now, forgets_};
}

caf::expected<principal> authenticator::looked_up(const lookup& asked, caf::expected<storage::token_holder> found) {
  if (!found) {
    if (found.error() == errc::not_found)
      return unauthenticated("the bearer token is not one this master issued: log in again (det user login)");
    return std::move(found.error());
  }
  if (auto refusal = token_refusal(*found, asked.asked_at)) return refusal;
  principal who{found->user.id(), found->user.username(), found->user.admin(), found->token.id(), asked.sha,
                found->token.kind()};
  remember_unless_forgotten(who, time_of(found->token.expires_at()), asked.forgets);
  return who;
}

void authenticator::authenticate_then(const std::string& sha, std::function<void(caf::expected<principal>)> done) {
  auto known = cached(sha);
  if (auto* answer = std::get_if<caf::expected<principal>>(&known)) return done(std::move(*answer));
  auto asked = std::get<lookup>(std::move(known));
  ask_then(
      sys_, accounts_, caf::duration{lookup_timeout},
      [this, asked, done](storage::token_holder& found) { done(looked_up(asked, std::move(found))); },
      [this, asked, done](caf::error& e) { done(looked_up(asked, std::move(e))); }, authenticate_atom::value,
      asked.sha);
}

void authenticator::remember(const principal& who, std::chrono::system_clock::time_point expires) {
  std::lock_guard<std::mutex> lock{mutex_};
  store_locked(who, expires);
}

void authenticator::store_locked(const principal& who, std::chrono::system_clock::time_point expires) {
  if (by_sha256_.size() >= max_cached)
    by_sha256_.clear();  // bounded; what is dropped is looked up again
  by_sha256_[who.token_sha256] = cache_entry{who, expires, std::chrono::steady_clock::now()};
}

void authenticator::remember_unless_forgotten(const principal& who, std::chrono::system_clock::time_point expires,
                                              uint64_t forgets) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (forgets == forgets_)  // else the token (or its user) may have been revoked while it was looked up
    store_locked(who, expires);
}

void authenticator::forget_token(int64_t token_id) {
  std::lock_guard<std::mutex> lock{mutex_};
  ++forgets_;
  for (auto it = by_sha256_.begin(); it != by_sha256_.end();)
    it = it->second.who.token_id == token_id ? by_sha256_.erase(it) : std::next(it);
}

void authenticator::forget_user(int64_t user_id) {
  std::lock_guard<std::mutex> lock{mutex_};
  ++forgets_;
  for (auto it = by_sha256_.begin(); it != by_sha256_.end();)
    it = it->second.who.user_id == user_id ? by_sha256_.erase(it) : std::next(it);
}

caf::error require_personal_token(const principal& who, const std::string& action) {
  if (who.kind != pb::TOKEN_KIND_TASK)
    return {};
  return make_error(errc::forbidden, action + " needs a login or an access token of user " + who.username +
                                         ", not a task's token (DET_USER_TOKEN)");
}

caf::error require_admin(const principal& who, const std::string& action) {
  if (who.admin)
    return {};
  return make_error(errc::forbidden, action + " needs an admin, and user " + who.username + " is not one");
}

caf::error require_owner(const principal& who, int64_t owner_id, const std::string& owner_name, const std::string& thing,
                         const std::string& verb) {
  if (who.admin || who.user_id == owner_id)
    return {};
  return make_error(errc::forbidden, "only " + thing + "'s owner (" + owner_name + ") or an admin may " + verb +
                                         " it, and user " + who.username + " is neither");
}

} // namespace det::runtime
