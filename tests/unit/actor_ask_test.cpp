// The bridge from HTTP routes to actors (master/http/actor_ask.hpp) driven by CAF's deterministic test
// scheduler: a route's response is deferred and the route returns before the actor has answered;
// the answer (or the actor's error, or the timeout) finishes the response; nothing blocks.

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caf/all.hpp"
#include "messages/interfaces.hpp"
#include "messages/errc.hpp"
#include "master/http/actor_ask.hpp"
#include "tests/unit/deferred_answer.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;
using det::runtime::http_response;

using det::testing::answer_of;

namespace {

using get_atom = caf::atom_constant<caf::atom("get")>;

/// An actor that knows experiment 1 and refuses the others as not found; `silent` answers nothing.
caf::behavior experiments(caf::event_based_actor*) {
  return {
      [](get_atom, int64_t id) -> caf::result<pb::Experiment> {
        if (id != 1) return make_error(errc::not_found, "experiment " + std::to_string(id) + " not found");
        pb::Experiment e;
        e.set_id(1);
        e.set_name("mnist");
        return e;
      },
  };
}

caf::behavior silent(caf::event_based_actor* self) {
  auto kept = std::make_shared<std::vector<caf::typed_response_promise<pb::Experiment>>>();
  return {[=](get_atom, int64_t) {
    kept->push_back(self->make_response_promise<pb::Experiment>());  // never delivered
    return kept->back();
  }};
}

/// A route as the gateway has one: asks and returns.
void route(caf::actor_system& sys, const caf::actor& dest, int64_t id, http_response& res) {
  runtime::ask_deferred<pb::Experiment>(
      sys, res, dest, [](const pb::Experiment& e, http_response& made) { runtime::reply_json(made, e); }, get_atom::value,
      id);
}

}  // namespace

TEST_CASE("a route's ask returns at once and its answer finishes the response") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(experiments);
  http_response res;
  route(*ds.sys, dest, 1, res);
  auto got = answer_of(res);
  CHECK_FALSE(got->has_value());  // nothing ran yet: the route did not wait
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 200);
  CHECK((*got)->body.find("\"mnist\"") != std::string::npos);
}

TEST_CASE("an actor's error finishes the response with its status and sentence") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(experiments);
  http_response res;
  route(*ds.sys, dest, 7, res);
  auto got = answer_of(res);
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status == 404);
  CHECK((*got)->body.find("experiment 7 not found") != std::string::npos);
}

TEST_CASE("an actor that never answers is a timeout, not a waiting thread") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(silent);
  http_response res;
  route(*ds.sys, dest, 1, res);
  auto got = answer_of(res);
  ds.run();
  CHECK_FALSE(got->has_value());
  CHECK(ds.sched->trigger_timeout());  // route_timeout elapses
  ds.run();
  REQUIRE(got->has_value());
  CHECK((*got)->status >= 500);
}

TEST_CASE("many asks in flight share no thread: each is answered when its actor answers") {
  testing::deterministic_system ds;
  auto dest = ds.sys->spawn(experiments);
  std::vector<http_response> responses(64);
  std::vector<std::shared_ptr<std::optional<http_response>>> answers;
  for (std::size_t i = 0; i < responses.size(); ++i) {
    route(*ds.sys, dest, i % 2 == 0 ? 1 : 2, responses[i]);
    answers.push_back(answer_of(responses[i]));
  }
  ds.run();
  for (std::size_t i = 0; i < answers.size(); ++i) {
    REQUIRE(answers[i]->has_value());
    CHECK((*answers[i])->status == (i % 2 == 0 ? 200 : 404));
  }
}
