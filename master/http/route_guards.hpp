#pragma once
// The middleware every REST route goes through: who the caller is (bearer token or the web UI's
// session cookie), what the caller may do (anyone logged in, admins, the owner of the experiment
// the path names), and identical reads that arrive together answered by one read. Routes wrap
// their handlers in these; none of them checks a token itself.

#include <cstdint>
#include <functional>
#include <string>

#include "master/http/http_types.hpp"

#include "master/http/authenticator.hpp"
#include "master/http/read_coalescer.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/transport.hpp"
#include "master/accounts/accounts_protocol.hpp"

namespace det::runtime {

/// A route's handler once its caller is known.
using signed_in_handler = std::function<void(const http_request&, http_response&, const principal&)>;

/// A route of a signed-in caller written as a coroutine `route(request, caller, out) ->
/// route_coroutine`, which takes the request by value: it outlives the handler's call. The lambda
/// `route` lives as long as the router, so what it captures stays valid while it is suspended.
template <class Route>
auto coroutine_route(caf::actor_system& sys, Route route) {
  return [&sys, route](const http_request& req, http_response& res, const auto& who) {
    route(req, who, reply_to{sys, res});
  };
}

/// The user the token whose SHA-256 is `sha` speaks for (or why not), to co_await: from the
/// authenticator's cache, else asked of the accounts actor without holding a thread.
route_coroutine_of<caf::expected<principal>> user_of_token(authenticator& auth, std::string sha, reply_to out);

class route_guards {
 public:
  route_guards(caf::actor_system& sys, authenticator& auth, accounts_actor accounts, transport scheme);

  /// Whether the caller of a request whose body has not been read yet is one det knows, by the
  /// bearer token or the session cookie (the server's check before it reads a body), handed to
  /// `done` without waiting.
  void signed_in_caller(const http_request& req, std::function<void(bool)> done) const;

  /// `handler`, run only for a caller whose bearer token or session is valid; 401 with the reason
  /// otherwise. A token that is not cached is looked up without holding the handler thread.
  http_handler signed_in(signed_in_handler handler) const;
  /// As signed_in(), for any user: reads are open to everyone logged in.
  http_handler reader(http_handler handler) const;
  /// As reader(), with identical GETs that arrive together answered by one read: a reader's
  /// answer is the same for every user, so the key is the path with its query.
  http_handler shared_reader(http_handler handler);
  /// As signed_in(), for admins only: `action` names what needs one in the 403's sentence.
  http_handler admin_only(std::string action, http_handler handler) const;
  /// As signed_in(), for the owner of the experiment the path's first number names, or an admin:
  /// `verb` says what they may do in the 403's sentence ("kill", "move").
  http_handler experiment_owner(std::string verb, signed_in_handler handler) const;
  http_handler experiment_owner(std::string verb, http_handler handler) const;

  /// The owner of experiment `id`, to co_await.
  auto owner_of_experiment(const reply_to& out, int64_t id) const {
    return ask<pb::User>(out, accounts_, owner_atom::value, experiment_id{id});
  }
  /// No error when `who` is the `owner` asked for, or an admin; else why not (forbidden,
  /// not_found, or a storage failure). `thing` names what is asked about ("experiment 3",
  /// "checkpoint U").
  static caf::error owner_refusal(asked<pb::User>& owner, const principal& who, const std::string& thing,
                                  const std::string& verb);

 private:
  /// Runs `route` for the user of the token whose SHA-256 is `sha` once the accounts actor has answered.
  route_coroutine after_lookup(std::string sha, std::shared_ptr<const signed_in_handler> route,
                               std::shared_ptr<const http_request> req, reply_to out) const;
  route_coroutine for_experiment_owner(int64_t id, principal who, std::string verb,
                                       std::shared_ptr<const signed_in_handler> route,
                                       std::shared_ptr<const http_request> req, reply_to out) const;

  caf::actor_system& sys_;
  authenticator& auth_;
  accounts_actor accounts_;
  transport scheme_;
  read_coalescer coalescer_;
};

} // namespace det::runtime
