#include "master/http/route_guards.hpp"

#include <memory>
#include <utility>

#include "caf/all.hpp"
#include "master/http/http_replies.hpp"
#include "master/http/session_cookie.hpp"
#include "messages/errc.hpp"
#include "storage/stored_rows.hpp"

namespace det::runtime {

route_guards::route_guards(caf::actor_system& sys, authenticator& auth, accounts_actor accounts, transport scheme)
    : sys_(sys), auth_(auth), accounts_(std::move(accounts)), scheme_(scheme) {}

route_coroutine_of<caf::expected<principal>> user_of_token(authenticator& auth, std::string sha, reply_to out) {
  auto known = auth.cached(sha);
  if (auto* answer = std::get_if<caf::expected<principal>>(&known)) co_return std::move(*answer);
  auto asked = std::get<authenticator::lookup>(std::move(known));
  auto found = co_await ask_within<storage::token_holder>(out, caf::duration{authenticator::lookup_timeout},
                                                          auth.accounts(), authenticate_atom::value, asked.sha);
  if (!found) co_return auth.looked_up(asked, std::move(found.error));
  co_return auth.looked_up(asked, std::move(*found));
}

void route_guards::signed_in_caller(const http_request& req, std::function<void(bool)> done) const {
  auto sha = presented_token_sha256(req, scheme_);
  if (!sha) return done(false);
  auth_.authenticate_then(*sha, [done](caf::expected<principal> who) { done(static_cast<bool>(who)); });
}

http_handler route_guards::signed_in(signed_in_handler route) const {
  auto handler = std::make_shared<const signed_in_handler>(std::move(route));
  return [this, handler](const http_request& req, http_response& res) {
#ifdef DET_BENCH_WITHOUT_AUTH
    // bench/auth_bench.py's baseline only (bench_det_node_without_auth, never installed): the
    // same routes with every caller taken for admin, so that the ratio is authentication's cost.
    return (*handler)(req, res, principal{storage::admin_user_id, "admin", true});
#endif
    auto sha = presented_token_sha256(req, scheme_);
    if (!sha)
      return reply_error(res, sys_, sha.error());
    auto known = auth_.cached(*sha);
    if (auto* who = std::get_if<caf::expected<principal>>(&known)) {
      if (!*who)
        return reply_error(res, sys_, who->error());
      return (*handler)(req, res, **who);
    }
    after_lookup(std::move(*sha), handler, std::make_shared<const http_request>(req), reply_to{sys_, res});
  };
}

route_coroutine route_guards::after_lookup(std::string sha, std::shared_ptr<const signed_in_handler> route,
                                           std::shared_ptr<const http_request> req, reply_to out) const {
  auto who = co_await user_of_token(auth_, std::move(sha), out);
  if (!who) co_return out.error(who.error());
  out.answer_with([&](const http_request& r, http_response& res) { (*route)(r, res, *who); }, *req);
}

http_handler route_guards::reader(http_handler handler) const {
  return signed_in([handler = std::move(handler)](const http_request& req, http_response& res, const principal&) {
    handler(req, res);
  });
}

http_handler route_guards::shared_reader(http_handler handler) {
  auto route = std::make_shared<const http_handler>(std::move(handler));
  return reader([this, route](const http_request& req, http_response& res) {
    // A copy: another request's read may be made with it after this route has returned.
    auto request = std::make_shared<const http_request>(req);
    coalescer_.answer(req.target, res, [route, request](http_response& shared) { (*route)(*request, shared); });
  });
}

http_handler route_guards::admin_only(std::string action, http_handler handler) const {
  return signed_in([this, action = std::move(action), handler = std::move(handler)](
                       const http_request& req, http_response& res, const principal& who) {
    if (auto e = require_admin(who, action))
      return reply_error(res, sys_, e);
    handler(req, res);
  });
}

caf::error route_guards::owner_refusal(asked<pb::User>& owner, const principal& who, const std::string& thing,
                                       const std::string& verb) {
  return owner ? require_owner(who, *owner, thing, verb) : std::move(owner.error);
}

http_handler route_guards::experiment_owner(std::string verb, signed_in_handler handler) const {
  auto route = std::make_shared<const signed_in_handler>(std::move(handler));
  return signed_in([this, verb = std::move(verb), route](const http_request& req, http_response& res,
                                                         const principal& who) {
    auto id = parse_id(req.matches[1]);
    if (!id)
      return reply_error(res, errc::not_found, "experiment " + req.matches[1].str() + " not found");
    for_experiment_owner(*id, who, verb, route, std::make_shared<const http_request>(req), reply_to{sys_, res});
  });
}

http_handler route_guards::experiment_owner(std::string verb, http_handler handler) const {
  return experiment_owner(std::move(verb), [handler = std::move(handler)](const http_request& req, http_response& res,
                                                                          const principal&) { handler(req, res); });
}

route_coroutine route_guards::for_experiment_owner(int64_t id, principal who, std::string verb,
                                                   std::shared_ptr<const signed_in_handler> route,
                                                   std::shared_ptr<const http_request> req, reply_to out) const {
  auto owner = co_await owner_of_experiment(out, id);
  if (auto refusal = owner_refusal(owner, who, "experiment " + std::to_string(id), verb))
    co_return out.error(refusal);
  out.answer_with([&](const http_request& r, http_response& res) { (*route)(r, res, who); }, *req);
}

} // namespace det::runtime
