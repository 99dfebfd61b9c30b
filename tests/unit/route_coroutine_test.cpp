// Route coroutines (master/http/route_coroutine.hpp) on CAF's deterministic test scheduler: a route
// that asks two actors one after the other reads as it runs and holds no thread between them; a
// step it awaits hands back its result; an actor's error and an exception answer the request.

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "caf/all.hpp"
#include "messages/errc.hpp"
#include "messages/interfaces.hpp"
#include "master/http/route_coroutine.hpp"
#include "tests/unit/deferred_answer.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;
using det::runtime::asked;
using det::runtime::http_response;
using det::runtime::reply_to;
using det::runtime::route_coroutine;
using det::runtime::route_coroutine_of;

using det::testing::answer_of;

namespace {

using get_atom = caf::atom_constant<caf::atom("get")>;

/// Knows users 1 (alice) and 2 (bob); the owner of experiment 7 is user 1.
caf::behavior accounts(caf::event_based_actor*) {
  return {
      [](get_atom, int64_t id) -> caf::result<pb::User> {
        if (id != 1 && id != 2) return make_error(errc::not_found, "user " + std::to_string(id) + " not found");
        pb::User u;
        u.set_id(id);
        u.set_username(id == 1 ? "alice" : "bob");
        return u;
      },
      [](get_atom, std::string experiment) -> int64_t { return experiment == "7" ? 1 : 2; },
  };
}

/// The owner of `experiment`: a step a route awaits.
route_coroutine_of<std::optional<pb::User>> owner_of(caf::actor dest, std::string experiment, reply_to out) {
  auto id = co_await runtime::ask<int64_t>(out, dest, get_atom::value, experiment);
  if (!id) {
    out.error(id.error);
    co_return std::nullopt;
  }
  auto user = co_await runtime::ask<pb::User>(out, dest, get_atom::value, *id);
  if (!user) {
    out.error(user.error);
    co_return std::nullopt;
  }
  co_return std::move(*user);
}

route_coroutine owner_route(caf::actor dest, std::string experiment, reply_to out) {
  auto owner = co_await owner_of(dest, experiment, out);
  if (!owner) co_return;
  out.json(*owner);
}

route_coroutine missing_user_route(caf::actor dest, reply_to out) {
  auto user = co_await runtime::ask<pb::User>(out, dest, get_atom::value, int64_t{9});
  if (!user) co_return out.error(user.error);
  out.json(*user);
}

route_coroutine throwing_route(caf::actor dest, reply_to out) {
  auto user = co_await runtime::ask<pb::User>(out, dest, get_atom::value, int64_t{1});
  if (user) throw std::runtime_error("the page could not be made");
  out.empty_json();
}

}  // namespace

TEST_CASE("a route coroutine asks one actor after another and answers with what it found") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(accounts);
  http_response res;
  owner_route(dest, "7", reply_to{*ds.sys, res});
  auto got = answer_of(res);
  CHECK_FALSE(got->has_value());  // suspended at its first ask: nothing waits
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 200);
  CHECK((*got)->body.find("\"alice\"") != std::string::npos);
}

TEST_CASE("an actor's error reaches the client with its status") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(accounts);
  http_response res;
  missing_user_route(dest, reply_to{*ds.sys, res});
  auto got = answer_of(res);
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 404);
  CHECK((*got)->body.find("user 9 not found") != std::string::npos);
}

TEST_CASE("an exception a route lets out answers 500 with its sentence") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(accounts);
  http_response res;
  throwing_route(dest, reply_to{*ds.sys, res});
  auto got = answer_of(res);
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 500);
  CHECK((*got)->body.find("the page could not be made") != std::string::npos);
}
