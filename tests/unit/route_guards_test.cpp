// The routes' middleware (master/http/route_guards.hpp) on CAF's deterministic test scheduler: a
// token that is not cached is looked up without the handler thread waiting for the accounts actor,
// and the route then runs for the token's user; a cached token runs it at once; an unknown token
// and a request without one are refused with 401. The server's check before a large body answers
// through a callback the same way.

#include <doctest/doctest.h>

#include <ctime>
#include <optional>
#include <string>

#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/route_guards.hpp"
#include "messages/errc.hpp"
#include "tests/unit/deferred_answer.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;
using det::runtime::http_request;
using det::runtime::http_response;
using det::runtime::principal;

using det::testing::answer_of;

namespace {

/// Knows one token, "alice-token", of user 1 (alice), valid for an hour; counts its lookups.
caf::behavior fake_accounts(caf::event_based_actor*, int* lookups) {
  return {
      [lookups](authenticate_atom, const std::string& sha) -> caf::result<storage::token_holder> {
        ++*lookups;
        if (sha != auth::sha256("alice-token")) return make_error(errc::not_found, "no such token");
        storage::token_holder found;
        found.token.set_id(5);
        found.token.set_kind(pb::TOKEN_KIND_ACCESS);
        found.token.mutable_expires_at()->set_seconds(std::time(nullptr) + 3600);
        found.user.set_id(1);
        found.user.set_username("alice");
        found.user.set_active(true);
        return found;
      },
  };
}

http_request with_token(const std::string& token) {
  http_request req;
  req.method = "GET";
  req.path = req.target = "/api/v1/me";
  if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  return req;
}

struct guarded_route {
  testing::deterministic_system ds;
  int lookups = 0;
  accounts_actor accounts = caf::actor_cast<accounts_actor>(ds.sys->spawn(fake_accounts, &lookups));
  runtime::authenticator auth{*ds.sys, accounts};
  runtime::route_guards guards{*ds.sys, auth, accounts, runtime::transport::http};
  std::string ran_for;  // the user the route last ran for
  runtime::http_handler route = guards.signed_in([this](const http_request&, http_response& res, const principal& who) {
    ran_for = who.username;
    res.set_content("{}", "application/json");
  });
};

}  // namespace

TEST_CASE("a token that is not cached is looked up without waiting, then the route runs for its user") {
  guarded_route g;
  auto req = with_token("alice-token");
  http_response res;
  g.route(req, res);
  auto got = answer_of(res);
  CHECK_FALSE(got->has_value());  // the lookup is under way and nothing waits for it
  CHECK(g.ran_for.empty());
  g.ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 200);
  CHECK(g.ran_for == "alice");
  CHECK(g.lookups == 1);

  // Cached now: the route runs at once, without asking the accounts actor again.
  g.ran_for.clear();
  http_response again;
  g.route(req, again);
  CHECK(g.ran_for == "alice");
  CHECK_FALSE(again.deferred);
  CHECK(g.lookups == 1);
}

TEST_CASE("a token the accounts actor does not know, or none, is refused with 401") {
  guarded_route g;
  http_response res;
  auto req = with_token("stolen");
  g.route(req, res);
  auto got = answer_of(res);
  g.ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 401);
  CHECK((*got)->body.find("not one this master issued") != std::string::npos);

  http_response without;
  g.route(with_token(""), without);
  CHECK(without.status == 401);
  CHECK(g.ran_for.empty());
}

TEST_CASE("the check before a large body answers through its callback, asking the accounts actor without waiting") {
  guarded_route g;
  std::optional<bool> known, unknown;
  g.guards.signed_in_caller(with_token("alice-token"), [&](bool ok) { known = ok; });
  g.guards.signed_in_caller(with_token("stolen"), [&](bool ok) { unknown = ok; });
  CHECK_FALSE(known.has_value());  // both lookups are under way; nothing waited for them
  g.ds.run();
  REQUIRE(known.has_value());
  REQUIRE(unknown.has_value());
  CHECK(*known);
  CHECK_FALSE(*unknown);

  std::optional<bool> without;
  g.guards.signed_in_caller(with_token(""), [&](bool ok) { without = ok; });
  CHECK(without == false);  // no token: refused at once
}
